#!/usr/bin/env python3
"""Generates the export surface of the guest libcuda.so.1 from its declaration list
(exports.txt) and the toolkit's headers.

Inputs: exports.txt (the implemented functions: the kind of each parameter, the shell, the
aliases; ../exports_list.py reads it), cuda.h and cudaProfiler.h (every function the driver API
declares, with the types and names of its parameters; libcuda exports the profiler calls too)
and cudaTypedefs.h, cudaProfilerTypedefs.h (every (function, ABI version) pair as
PFN_<name>_v<version>[_ptds|_ptsz] typedefs).

Outputs (all into OUTDIR, never committed):
  cuda_api_autogen.h       the prototype of every hand-written body, pvgpu::guest::api::Name
                           (cuMemAlloc_v2 -> api::MemAlloc_v2), with resolved handles: a body
                           that does not match its list entry does not compile.
  cuda_shells_autogen.cc   the export of every listed name, its aliases and its per-thread
                           stream variants (_ptds/_ptsz): initialization check, argument checks
                           in one order, handle resolution, the body, the trace, the CUresult.
  cuda_stubs_autogen.cc    a stub for every other declared function: logs once, returns
                           CUDA_ERROR_NOT_SUPPORTED.
  cuda_proc_table_autogen.cc  the cuGetProcAddress table: (base name, version, stream kind,
                           symbol, address), sorted by base name.
  cuda_exports_autogen.txt  every exported name, one a line, for the export test.

Why the stubs use the signature `int name()` and do not include cuda.h: every cuda.h function
returns CUresult (an int-sized enum; the generator checks this), a stub ignores its arguments,
and on the C ABIs we target the caller owns the argument area, so the parameter list does not
matter. Not including cuda.h also avoids every collision with its name-mapping macros
(cuMemAlloc -> cuMemAlloc_v2). The shells do need the parameters; they come from cuda.h's own
prototypes (declared with __CUDA_API_VERSION_INTERNAL, which makes cuda.h declare every
versioned, legacy and per-thread name and drop the mapping macros).

Declarations are read from the output of the C preprocessor (CC -E), not from the raw header,
so multi-line prototypes, CUDAAPI, __CUDA_DEPRECATED and conditional sections are resolved by
the compiler itself.

Usage: gen_exports.py CC INCLUDE_DIR OUTDIR exports.txt
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import exports_list  # noqa: E402  (src/guest/exports_list.py)

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


HEADER = ("// Generated by gen_exports.py from exports.txt, cuda.h and cudaTypedefs.h. "
          "Do not edit.\n")


def emit_stubs(names):
    out = [HEADER,
           "// Weak stubs: see gen_exports.py for why they are declared `int name()`.",
           '#include "guest/cuda/unsupported.h"', "",
           "#define PVGPU_STUB(name)                                        \\",
           "  extern \"C\" __attribute__((visibility(\"default\"))) int name() { \\",
           "    static pvgpu::guest::OnceFlag once;                          \\",
           "    return pvgpu::guest::NotSupported(#name, &once);             \\",
           "  }", ""]
    out += [f"PVGPU_STUB({name})" for name in names]
    return "\n".join(out) + "\n"


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



# The kinds a parameter may have, and what the shell does with each (docs/guest.md). Resolved
# kinds: (the holder the shell declares, the resolver that fills it, what the body receives,
# the body's parameter type); the resolvers are in resolve.h.
RESOLVED = {
    "ctx": ("CUctx_st*", "ResolveContext", "{}", "CUctx_st*"),
    "ctx?": ("CUctx_st*", "ResolveOptionalContext", "{}", "CUctx_st*"),
    "stream": ("StreamRef", "ResolveStream", "{}", "const StreamRef&"),
    "stream_unordered": ("StreamRef", "ResolveStream", "{}", "const StreamRef&"),
    "created_stream": ("Ref<CUstream_st>", "ResolveCreatedStream", "{}.get()", "CUstream_st*"),
    "event": ("Ref<CUevent_st>", "ResolveEvent", "{}.get()", "CUevent_st*"),
    "module": ("Ref<CUmod_st>", "ResolveModule", "{}.get()", "CUmod_st*"),
    "function": ("Ref<CUfunc_st>", "ResolveFunction", "{}.get()", "CUfunc_st*"),
    "function_or_kernel": ("Ref<CUfunc_st>", "ResolveFunctionOrKernel", "{}.get()",
                           "CUfunc_st*"),
    "library": ("Ref<CUlib_st>", "ResolveLibrary", "{}.get()", "CUlib_st*"),
    "kernel": ("Ref<CUkern_st>", "ResolveKernel", "{}.get()", "CUkern_st*"),
    "link": ("Ref<CUlinkState_st>", "ResolveLink", "{}.get()", "CUlinkState_st*"),
    "device": ("const Device*", "ResolveDevice", "*{}", "const Device&"),
}
PLAIN = {"out", "out?", "in", "in?", "string", "string?", "count", "array", "dptr", "flags",
         "value"}
KINDS = set(RESOLVED) | PLAIN
# Streams whose default (null) handle means the per-thread stream in a _ptds/_ptsz variant.
STREAM_KINDS = ("stream", "stream_unordered")

LIB = exports_list.Library(
    result="Code", ok="Code::kOk", invalid="Code::kInvalidValue", modes={}, resolved=RESOLVED,
    to_c="static_cast<CUresult>(pvgpu_result)", name="ResultName(pvgpu_result)")
LIB.modes = {
    "any": ([], None, None),
    "init": ([LIB.check("CheckInit()")], None, None),
    "context": (["    CUctx_st* ctx = nullptr;", LIB.check("CurrentLiveContext(&ctx)")], "ctx",
                "CUctx_st* ctx"),
    "hand": ([], None, None),
}
SHELLS = tuple(LIB.modes)


def body_name(entry):
    return entry.name[2:]  # cuMemAlloc_v2 -> MemAlloc_v2, in namespace pvgpu::guest::api


def shell(entry, symbol, params, per_thread):
    """The extern "C" definition of `symbol` (the entry's name, an alias, or a per-thread
    variant), calling the entry's body."""
    args = exports_list.param_names(params)
    prologue = []
    if per_thread:
        prologue = [f"  if ({arg} == nullptr) {arg} = CU_STREAM_PER_THREAD;"
                    for kind, arg in zip(entry.kinds, args) if kind in STREAM_KINDS]

    def waits(args):  # stream-ordered work runs after the host functions it must follow
        return [LIB.check(f"OrderAfterHostFuncs({arg}_ref)")
                for kind, arg in zip(entry.kinds, args) if kind == "stream"]

    return exports_list.shell(LIB, entry, f'extern "C" CUresult CUDAAPI {symbol}({params})',
                              symbol, params, prologue, waits, f"api::{body_name(entry)}")


def emit_shells(shells):
    out = [HEADER,
           "// The exported shell of every listed function (see gen_exports.py, docs/guest.md).",
           "#define __CUDA_API_VERSION_INTERNAL 1", "#include <cuda.h>", ""]
    # In this mode cuda.h still maps a few names to others (cuEventRecord -> its per-thread
    # form): without these #undefs a definition would define another name.
    out += [f"#undef {symbol}" for symbol, _ in shells]
    out += ["", '#include "common/api_trace.h"', '#include "guest/cuda/cuda_api_autogen.h"',
            '#include "guest/cuda/resolve.h"', "", "namespace pvgpu::guest {", ""]
    out += [text for _, text in shells]
    out += ["}  // namespace pvgpu::guest", ""]
    return "\n".join(out)


def emit_bodies(entries, decls):
    out = [HEADER, "// The hand-written bodies behind the generated shells (cuda_shells_autogen.cc).",
           "#pragma once", "", "#include <cuda.h>", "", '#include "common/status.h"',
           '#include "guest/cuda/objects.h"', "", "struct CUlib_st;", "struct CUkern_st;",
           "struct CUlinkState_st;", "", "namespace pvgpu::guest::api {", ""]
    for entry in entries:
        if entry.shell != "hand":
            params = exports_list.body_params(LIB, entry, decls[entry.name][1])
            out.append(f"Code {body_name(entry)}({params});")
    out += ["", "}  // namespace pvgpu::guest::api", ""]
    return "\n".join(out)


def exported_shells(entries, decls):
    """[(symbol, definition)] for every generated export, and the names of hand-written ones."""
    shells, hand = [], set()
    listed = {name for entry in entries for name in entry.names()}
    params = {name: p for name, (_, p) in decls.items()}
    for entry in entries:
        if entry.name not in decls:
            entry.fail("cuda.h declares no such function")
        exports_list.check_aliases(entry, params)
        for name in entry.names():
            variants = [(name, False)] + [(name + suffix, True) for suffix in PT_SUFFIXES
                                          if name + suffix in decls
                                          and name + suffix not in listed]
            for symbol, per_thread in variants:
                if entry.shell == "hand":
                    hand.add(symbol)
                else:
                    shells.append((symbol, shell(entry, symbol, params[symbol], per_thread)))
    return shells, hand


def main():
    cc, include_dir, outdir, list_path = sys.argv[1:5]
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
    entries = exports_list.read(list_path, KINDS, SHELLS)
    shells, hand = exported_shells(entries, decls)
    exported = {symbol for symbol, _ in shells} | hand
    stubs = [n for n in sorted(decls) if n not in exported]
    os.makedirs(outdir, exist_ok=True)
    exports_list.write(os.path.join(outdir, "cuda_api_autogen.h"), emit_bodies(entries, decls))
    exports_list.write(os.path.join(outdir, "cuda_shells_autogen.cc"), emit_shells(shells))
    exports_list.write(os.path.join(outdir, "cuda_stubs_autogen.cc"), emit_stubs(stubs))
    exports_list.write(os.path.join(outdir, "cuda_proc_table_autogen.cc"), emit_table(table))
    exports_list.write(os.path.join(outdir, "cuda_exports_autogen.txt"),
                       "\n".join(sorted(decls)) + "\n")


if __name__ == "__main__":
    main()
