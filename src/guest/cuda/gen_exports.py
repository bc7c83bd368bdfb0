#!/usr/bin/env python3
"""Generates the export surface of the guest libcuda.so.1 from the toolkit's headers.

Inputs: cuda.h and cudaProfiler.h (every function the driver API declares; libcuda exports
the profiler calls too) and cudaTypedefs.h, cudaProfilerTypedefs.h (every
(function, ABI version) pair as PFN_<name>_v<version>[_ptds|_ptsz] typedefs), plus the
hand-written api_*.cc sources (to know which functions pvgpu implements).

Outputs (all into OUTDIR, never committed):
  cuda_stubs_autogen.cc    a weak stub for every declared function: logs once, returns
                           CUDA_ERROR_NOT_SUPPORTED. Strong definitions in api_*.cc win at link
                           time, so this file needs no list of implemented functions.
  cuda_ptds_autogen.cc     weak per-thread-stream variants (_ptds/_ptsz) of implemented
                           functions, forwarding to the implemented base.
  cuda_proc_table_autogen.cc  the cuGetProcAddress table: (base name, version, stream kind,
                           symbol, address), sorted by base name.
  cuda_exports_autogen.txt  every exported name, one a line, for the export test.

Why the stubs use the signature `int name()` and do not include cuda.h: every cuda.h function
returns CUresult (an int-sized enum; the generator checks this), a stub ignores its arguments,
and on the C ABIs we target the caller owns the argument area, so the parameter list does not
matter. Not including cuda.h also avoids every collision with its name-mapping macros
(cuMemAlloc -> cuMemAlloc_v2). The forwarders do need the parameters; they come from
cuda.h's own prototypes (declared with __CUDA_API_VERSION_INTERNAL, which makes cuda.h declare
every versioned, legacy and per-thread name and drop the mapping macros).

Declarations are read from the output of the C preprocessor (CC -E), not from the raw header,
so multi-line prototypes, CUDAAPI, __CUDA_DEPRECATED and conditional sections are resolved by
the compiler itself.

Usage: gen_exports.py CC INCLUDE_DIR OUTDIR api_*.cc...
"""

import os
import re
import subprocess
import sys

PT_SUFFIXES = ("_ptds", "_ptsz")
API_HEADERS = ("cuda.h", "cudaProfiler.h")
TYPEDEF_HEADERS = ("cudaTypedefs.h", "cudaProfilerTypedefs.h")


def preprocess(cc, include_dir, header, defines=(), macros_only=False):
    cmd = [cc, "-E", "-P", "-I", include_dir] + ["-D" + d for d in defines]
    if macros_only:
        cmd.append("-dM")
    cmd.append(os.path.join(include_dir, header))
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def strip_bodies(text):
    """Removes { ... } blocks (struct bodies, static inline function bodies) so that top-level
    statements can be split at ';'. A function definition becomes `head {}`."""
    out, depth = [], 0
    for ch in text:
        if ch == "{":
            if depth == 0:
                out.append("{}")
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


DECL_RE = re.compile(r"^(?:extern\s+)?(?P<ret>[A-Za-z_][\w\s\*]*?)\s*\b(?P<name>cu\w+)\s*"
                     r"\((?P<params>.*)\)\s*(?:__attribute__\s*\(\(.*\)\)\s*)*$", re.S)


def declarations(pre_text):
    """{name: (return type, parameter text)} for every cu* function declared (not defined)."""
    result = {}
    for stmt in strip_bodies(pre_text).split(";"):
        stmt = " ".join(stmt.split())
        # Attributes (__CUDA_DEPRECATED) say nothing about the ABI.
        stmt = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", "", stmt).strip()
        # A definition ends without ';', so it heads the statement of the next declaration;
        # definitions themselves (static inline cuGetProcAddress_v2_ptsz) are not exports.
        stmt = stmt.split("{}")[-1].strip()
        if not stmt or stmt.startswith("typedef") or stmt.startswith("static"):
            continue
        m = DECL_RE.match(stmt)
        if m:
            result[m.group("name")] = (" ".join(m.group("ret").split()), m.group("params"))
    return result


def name_macros(cc, include_dir):
    """cuda.h's default (legacy stream) mapping of API names to ABI names: cuMemAlloc ->
    cuMemAlloc_v2, cuMemcpyHtoD -> cuMemcpyHtoD_v2 (its _ptds variant when per-thread)."""
    mapping = {}
    for line in preprocess(cc, include_dir, "cuda.h", macros_only=True).splitlines():
        m = re.match(r"#define (cu\w+) (?:__CUDA_API_PT(?:DS|SZ)\((\w+)\)|(cu\w+))$", line)
        if m:
            mapping[m.group(1)] = m.group(2) or m.group(3)
    return mapping


def pfn_pairs(cc, include_dir):
    """[(base, version, suffix)] from the typedef headers, legacy section included."""
    text = "".join(preprocess(cc, include_dir, header, ["__CUDA_API_VERSION_INTERNAL"])
                   for header in TYPEDEF_HEADERS)
    pairs = set()
    for m in re.finditer(r"\bPFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\)", text):
        pairs.add((m.group(1), int(m.group(2)), m.group(3) or ""))
    return sorted(pairs)


def versioned(base, index):
    return base if index == 1 else f"{base}_v{index}"


def proc_table(pairs, macros, declared):
    """[(base, version, suffix, symbol)]: which ABI symbol each PFN typedef names.

    cudaTypedefs.h gives versions, not symbol names. The newest plain version of a base is the
    symbol cuda.h maps the base to (cuCtxCreate -> cuCtxCreate_v4); older versions count down
    (_v3, _v2, then the unversioned name). A per-thread entry PFN_x_vN_ptds is the per-thread
    form of the newest plain version <= N. Entries whose symbol cuda.h does not declare are
    dropped (and reported), never guessed."""
    by_base = {}
    for base, version, suffix in pairs:
        by_base.setdefault(base, []).append((version, suffix))
    table, dropped = [], []
    for base, entries in sorted(by_base.items()):
        plain = sorted(v for v, s in entries if not s)
        target = macros.get(base, base)
        m = re.fullmatch(re.escape(base) + r"_v(\d+)", target)
        # Without such a mapping (cuCtxGetDevice, or cuGraphInstantiate, which cuda.h maps to
        # another function) the versions are the base's own symbols counted from the oldest.
        newest_index = int(m.group(1)) if m else len(plain)
        symbols = {}
        for offset, version in enumerate(reversed(plain)):
            index = newest_index - offset
            if index >= 1:
                symbols[version] = versioned(base, index)
        for version, suffix in sorted(entries):
            if suffix:
                older = [v for v in plain if v <= version]
                plain_symbol = symbols.get(older[-1]) if older else base
                symbol = plain_symbol + suffix if plain_symbol else None
            else:
                symbol = symbols.get(version)
            if symbol is None or symbol not in declared:
                dropped.append(f"{base}_v{version}{suffix} -> {symbol}")
                continue
            table.append((base, version, suffix, symbol))
    return table, dropped


def implemented(sources, macros):
    """ABI names the hand-written sources define, after cuda.h's mapping macros."""
    names = set()
    for path in sources:
        text = open(path, encoding="utf-8").read()
        # A file that #undefs a name (api_legacy.cc) defines that exact symbol.
        literal = set(re.findall(r"^\s*#\s*undef\s+(cu\w+)", text, re.M))
        for m in re.finditer(r"\bCUDAAPI\s+(cu\w+)\s*\(", text):
            name = m.group(1)
            names.add(name if name in literal else macros.get(name, name))
    return names


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
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def param_names(params):
    """Names of the parameters in a prototype's parameter text, or None when one is unnamed."""
    names = []
    for part in split_params(params):
        part = re.sub(r"\[[^\]]*\]\s*$", "", part.strip())
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", part)  # function pointer parameter
        m = fp or re.search(r"[\s\*](\w+)$", part)
        if not m or m.group(1) in ("int", "char", "long", "short", "float", "double", "void"):
            return None
        names.append(m.group(1))
    return names


HEADER = "// Generated by gen_exports.py from cuda.h and cudaTypedefs.h. Do not edit.\n"


def emit_stubs(names):
    out = [HEADER,
           "// Weak stubs: see gen_exports.py for why they are declared `int name()`.",
           '#include "guest/cuda/unsupported.h"', "",
           "#define PVGPU_STUB(name)                                              \\",
           "  extern \"C\" __attribute__((weak, visibility(\"default\"))) int name() { \\",
           "    static pvgpu::guest::OnceFlag once;                                \\",
           "    return pvgpu::guest::NotSupported(#name, &once);                   \\",
           "  }", ""]
    out += [f"PVGPU_STUB({name})" for name in names]
    return "\n".join(out) + "\n"


def emit_forwarders(forwarders, decls):
    out = [HEADER,
           "// Per-thread default stream variants of implemented functions: each forwards to",
           "// its base, with the default stream (a null CUstream) named CU_STREAM_PER_THREAD.",
           "#define __CUDA_API_VERSION_INTERNAL 1", "#include <cuda.h>", ""]
    # In this mode cuda.h maps some base names to their per-thread forms (cuEventRecord ->
    # cuEventRecord_ptsz): without these #undefs a forwarder would call itself.
    for name in sorted({n for pair in forwarders for n in pair}):
        out.append(f"#undef {name}")
    out.append("")
    for name, base in forwarders:
        ret, params = decls[name]
        args = []
        for part, arg in zip(split_params(params), param_names(params)):
            if re.fullmatch(r"\s*CUstream\s+\w+\s*", part):
                arg = f"({arg} == nullptr ? CU_STREAM_PER_THREAD : {arg})"
            args.append(arg)
        args = ", ".join(args)
        out += [f'extern "C" __attribute__((weak)) {ret} CUDAAPI {name}({params}) {{',
                f"  return {base}({args});", "}", ""]
    return "\n".join(out)


def emit_table(table):
    symbols = sorted({row[3] for row in table})
    out = [HEADER, '#include "guest/cuda/proc_address.h"', "",
           "// Addresses only: declared without cuda.h, like the stubs (see gen_exports.py).",
           'extern "C" {']
    out += [f"int {s}();" for s in symbols]
    out += ["}", "", "namespace pvgpu::guest {", "",
            "const ProcEntry kProcTable[] = {"]
    for base, version, suffix, symbol in table:
        kind = {"": "kLegacy", "_ptds": "kPerThread", "_ptsz": "kPerThread"}[suffix]
        out.append(f'    {{"{base}", {version}, StreamKind::{kind}, "{symbol}", '
                   f"reinterpret_cast<void*>(&{symbol})}},")
    out += ["};", "const size_t kProcTableSize = sizeof(kProcTable) / sizeof(kProcTable[0]);",
            "", "}  // namespace pvgpu::guest"]
    return "\n".join(out) + "\n"


def write(path, text):
    # Unchanged outputs keep their timestamps so that Ninja does not rebuild their users.
    if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    cc, include_dir, outdir, sources = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    decls = {}
    for defines in ([], ["CUDA_API_PER_THREAD_DEFAULT_STREAM"], ["__CUDA_API_VERSION_INTERNAL"]):
        for header in API_HEADERS:
            decls.update(declarations(preprocess(cc, include_dir, header, defines)))
    bad = {n: r for n, (r, _) in decls.items() if r != "CUresult"}
    if bad:
        sys.exit(f"gen_exports.py: functions not returning CUresult need a stub rule: {bad}")
    macros = name_macros(cc, include_dir)
    table, dropped = proc_table(pfn_pairs(cc, include_dir), macros, decls)
    for entry in dropped:
        print(f"gen_exports.py: no declared symbol for {entry}; left out of cuGetProcAddress")
    done = implemented(sources, macros)
    forwarders = []
    for name in sorted(decls):
        for suffix in PT_SUFFIXES:
            base = name[:-len(suffix)]
            if name.endswith(suffix) and base in done and name not in done:
                if param_names(decls[name][1]) is None:
                    sys.exit(f"gen_exports.py: cannot name the parameters of {name}")
                forwarders.append((name, base))
    forwarded = {name for name, _ in forwarders}
    stubs = [n for n in sorted(decls) if n not in forwarded]
    os.makedirs(outdir, exist_ok=True)
    write(os.path.join(outdir, "cuda_stubs_autogen.cc"), emit_stubs(stubs))
    write(os.path.join(outdir, "cuda_ptds_autogen.cc"), emit_forwarders(forwarders, decls))
    write(os.path.join(outdir, "cuda_proc_table_autogen.cc"), emit_table(table))
    write(os.path.join(outdir, "cuda_exports_autogen.txt"), "\n".join(sorted(decls)) + "\n")


if __name__ == "__main__":
    main()
