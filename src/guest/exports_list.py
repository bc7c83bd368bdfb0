"""Reads a guest library's declaration list (src/guest/cuda/exports.txt,
src/guest/nvml/exports.txt): one implemented C function a line, with the kind of each of its
parameters, what its export shell checks first, and the older ABI names its body also serves.
Shared by the two libraries' generators (gen_exports.py in each folder), with the helpers both
need to take C prototypes apart and to write the trace of a call. docs/guest.md describes the
format.

    ABI_NAME(KIND, ...)  SHELL  [= ALIAS ...]   [# comment]
"""

import re
import sys

LINE_RE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*\((?P<kinds>[^()]*)\)\s+(?P<shell>\w+)"
                     r"(?:\s*=\s*(?P<aliases>[\w\s]+?))?\s*$")


class Entry:
    def __init__(self, path, line, name, kinds, shell, aliases):
        self.where = f"{path}:{line}"
        self.name = name
        self.kinds = kinds
        self.shell = shell
        self.aliases = aliases

    def names(self):
        """The ABI names this entry's body serves: its own, then the aliases."""
        return [self.name] + self.aliases

    def fail(self, message):
        sys.exit(f"{self.where}: {self.name}: {message}")


def read(path, kinds, shells):
    """The entries of the list at `path`; exits naming the line of the first mistake."""
    entries, seen = [], set()
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = LINE_RE.match(line)
            if not m:
                sys.exit(f"{path}:{number}: not NAME(KIND, ...) SHELL [= ALIAS ...]: {line!r}")
            arg_kinds = [k.strip() for k in m.group("kinds").split(",")] if m.group("kinds").strip() else []
            entry = Entry(path, number, m.group("name"), arg_kinds, m.group("shell"),
                          (m.group("aliases") or "").split())
            for kind in arg_kinds:
                if kind not in kinds:
                    entry.fail(f"unknown kind {kind!r} (known: {', '.join(sorted(kinds))})")
            if entry.shell not in shells:
                entry.fail(f"unknown shell {entry.shell!r} (known: {', '.join(shells)})")
            for name in entry.names():
                if name in seen:
                    entry.fail(f"{name} is listed twice")
                seen.add(name)
            entries.append(entry)
    return entries


def split_params(params):
    """A prototype's parameter text split at its top-level commas."""
    params = params.strip()
    if params in ("", "void"):
        return []
    parts, depth, current = [], 0, ""
    for ch in params:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return parts


def param_name(part):
    """The name of one parameter (`const char *name` -> name), or None when it has none."""
    part = re.sub(r"\[[^\]]*\]\s*$", "", part.strip())
    fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", part)  # function pointer parameter
    m = fp or re.search(r"[\s\*](\w+)$", part)
    if not m or m.group(1) in ("int", "char", "long", "short", "float", "double", "void"):
        return None
    return m.group(1)


def param_names(params):
    """Names of the parameters in a prototype's parameter text, or None when one is unnamed."""
    names = [param_name(part) for part in split_params(params)]
    return None if None in names else names


def param_type(part):
    """One parameter's type with its name taken out, spaces normalized: for comparing the
    prototypes of an entry and its aliases."""
    name = param_name(part)
    text = re.sub(r"\b" + re.escape(name) + r"\b", "", part, count=1) if name else part
    return " ".join(text.replace("*", " * ").split())


def check_prototype(entry, name, params):
    """The parameter names of `name`'s prototype, checked against the entry's kinds."""
    names = param_names(params)
    if names is None:
        entry.fail(f"cannot name every parameter of {name}({params})")
    if len(names) != len(entry.kinds):
        entry.fail(f"{len(entry.kinds)} kinds for the {len(names)} parameters of "
                   f"{name}({params})")
    return names


def trace_call(name, kinds, args, result):
    """The C++ statement that traces a call: CallTrace, one formatter per argument by kind."""
    parts = [f'::pvgpu::log::CallTrace("{name}")']
    for kind, arg in zip(kinds, args):
        if kind in ("dptr", "flags"):
            parts.append(f".Hex({arg})")
        elif kind in ("string", "string?"):
            parts.append(f".Text({arg})")
        else:
            parts.append(f".Value({arg})")
    parts.append(f".Result({result});")
    return "".join(parts)


def null_checks(entry, args):
    """The conditions under which the pointer checks fail with the invalid-argument error."""
    conditions = []
    counts = [arg for kind, arg in zip(entry.kinds, args) if kind == "count"]
    for kind, arg in zip(entry.kinds, args):
        if kind in ("out", "in", "string"):
            conditions.append(f"{arg} == nullptr")
        elif kind == "array":
            if len(counts) != 1:
                entry.fail(f"an array argument ({arg}) needs exactly one count argument")
            conditions.append(f"({counts[0]} != 0 && {arg} == nullptr)")
    return conditions


class Library:
    """What differs between the libraries' shells. result: the bodies' result type; ok and
    invalid: its success and invalid-argument values; modes: SHELL -> (lines that check it,
    the argument it passes to the body first, or None); resolved: KIND -> (holder type,
    resolver, what the body receives, the body's parameter type); to_c: the C result of
    `pvgpu_result`; name: the expression naming `pvgpu_result` in the trace."""

    def __init__(self, result, ok, invalid, modes, resolved, to_c, name):
        self.result, self.ok, self.invalid = result, ok, invalid
        self.modes, self.resolved, self.to_c, self.name = modes, resolved, to_c, name

    def check(self, expression):
        return f"    if ({self.result} r = {expression}; r != {self.ok}) return r;"


def shell_body(lib, entry, args, body):
    """The lines of a shell's checking lambda, in the fixed order: the SHELL's precondition,
    the pointer checks, the handles in argument order; then the call of `body` with the
    resolved arguments. Returns (lines, the resolved arguments' names)."""
    lines, call_args = list(lib.modes[entry.shell][0]), []
    if lib.modes[entry.shell][1] is not None:
        if lib.modes[entry.shell][1] in args:
            entry.fail(f"a parameter named {lib.modes[entry.shell][1]} would hide the shell's")
        call_args.append(lib.modes[entry.shell][1])
    conditions = null_checks(entry, args)
    if conditions:
        lines.append(f"    if ({' || '.join(conditions)}) return {lib.invalid};")
    for kind, arg in zip(entry.kinds, args):
        if kind in lib.resolved:
            holder, resolver, passed, _ = lib.resolved[kind]
            lines.append(f"    {holder} {arg}_ref{{}};")
            lines.append(lib.check(f"{resolver}({arg}, &{arg}_ref)"))
            call_args.append(passed.format(f"{arg}_ref"))
        else:
            call_args.append(arg)
    return lines, call_args


def shell(lib, entry, signature, symbol, params, prologue, extra_checks, body):
    """The definition of an exported shell: `signature {`, the `prologue` lines, the checking
    lambda (shell_body, then `extra_checks(args)` lines, then `body(call args)`), the trace,
    the conversion of the result."""
    args = param_names(params)
    lines, call_args = shell_body(lib, entry, args, body)
    out = [f"{signature} {{"] + prologue
    out.append(f"  const {lib.result} pvgpu_result = [&]() -> {lib.result} {{")
    out += lines + extra_checks(args)
    out.append(f"    return {body}({', '.join(call_args)});")
    out.append("  }();")
    out.append("  if (::pvgpu::log::Enabled(::pvgpu::log::Level::kTrace)) {")
    out.append("    " + trace_call(symbol, entry.kinds, args, lib.name))
    out.append("  }")
    out.append(f"  return {lib.to_c};")
    out.append("}")
    return "\n".join(out) + "\n"


def body_params(lib, entry, params):
    """A body's parameter list: the prototype's parameters, resolved kinds retyped, after the
    SHELL's own argument (libcuda's current context)."""
    out = [] if lib.modes[entry.shell][1] is None else [lib.modes[entry.shell][2]]
    for kind, part in zip(entry.kinds, split_params(params)):
        if kind in lib.resolved:
            out.append(f"{lib.resolved[kind][3]} {param_name(part)}")
        else:
            out.append(part)
    return ", ".join(out)


def check_aliases(entry, decls):
    """Checks that the entry and each alias have one prototype (parameter types, not names)."""
    check_prototype(entry, entry.name, decls[entry.name])
    own = [param_type(p) for p in split_params(decls[entry.name])]
    for name in entry.names():
        if name not in decls:
            entry.fail(f"no prototype declares {name}")
        if [param_type(p) for p in split_params(decls[name])] != own:
            entry.fail(f"alias {name}({decls[name]}) does not have the prototype of "
                       f"{entry.name}({decls[entry.name]})")


def write(path, text):
    """Writes `text` unless the file already holds it, so that Ninja does not rebuild users."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
