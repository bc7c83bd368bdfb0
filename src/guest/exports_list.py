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


def null_checks(kinds, args):
    """The conditions under which an argument check fails with the invalid-argument error."""
    conditions = []
    counts = [arg for kind, arg in zip(kinds, args) if kind == "count"]
    for kind, arg in zip(kinds, args):
        if kind in ("out", "in", "string"):
            conditions.append(f"{arg} == nullptr")
        elif kind == "array":
            if len(counts) != 1:
                sys.exit(f"an array argument ({arg}) needs exactly one count argument")
            conditions.append(f"({counts[0]} != 0 && {arg} == nullptr)")
    return conditions


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
