"""CuPy features that call kernels CuPy does not compile itself: NVIDIA's libraries (cuBLAS,
cuRAND's host API, cuSOLVER, cuFFT, cuSPARSE) and the CUB and Thrust kernels that ship
precompiled in CuPy's wheel. Their fat binaries hold machine code for NVIDIA GPUs and, for most
kernels, PTX for the newest architectures only, using instructions of those GPUs.

Each feature must either give NumPy's answer or fail with an exception while pvgpu's libcuda
logs, on stderr, a line that names the library whose code cannot run (so a user sees which
library, and so which CuPy feature, the cpu adapter cannot serve). A wrong answer without an
error is never acceptable: CuPy's CUB path ignores failed launches, so a CUB module that cannot
load must not go unnoticed.

Each feature runs in its own process (a failed launch leaves a context unusable), against the
same pvgpu host.
"""
import os
import subprocess
import sys

CASES = {
    # name: (CUPY_ACCELERATORS, code computing `got` and `want`, library files to be named)
    "matmul (cuBLAS)": ("", """
a = rng.standard_normal((64, 48)).astype(np.float32); b = rng.standard_normal((48, 32)).astype(np.float32)
got, want = cp.asarray(a) @ cp.asarray(b), a @ b""", ("libcublas",)),
    "linalg.solve (cuSOLVER)": ("", """
a = rng.standard_normal((32, 32)) + 32 * np.eye(32); b = rng.standard_normal(32)
got, want = cp.linalg.solve(cp.asarray(a), cp.asarray(b)), np.linalg.solve(a, b)""", ("libcusolver", "libcublas")),
    "fft (cuFFT)": ("", """
a = rng.standard_normal(256)
got, want = cp.fft.fft(cp.asarray(a)), np.fft.fft(a)""", ("libcufft",)),
    "RandomState (cuRAND)": ("", """
v = cp.random.RandomState(5).standard_normal(100_000).get()
got, want = np.array([v.mean(), v.std()]), np.array([0.0, 1.0])
tolerance = 0.02""", ("libcurand",)),
    "sparse matrix-vector (cuSPARSE)": ("", """
import cupyx.scipy.sparse as sparse
a = rng.standard_normal((64, 64)) * (rng.random((64, 64)) < 0.1); v = rng.standard_normal(64)
got, want = sparse.csr_matrix(cp.asarray(a)) @ cp.asarray(v), a @ v""", ("libcusparse", "libcublas")),
    "sort (Thrust in CuPy)": ("", """
a = rng.standard_normal(10_000)
got, want = cp.sort(cp.asarray(a)), np.sort(a)""", ("thrust.cpython",)),
    "sum with the CUB accelerator (CUB in CuPy)": ("cub", """
a = rng.standard_normal(100_000)
got, want = cp.asarray(a).sum(), a.sum()""", ("cub.cpython",)),
}

CHILD = """
import os, sys
import numpy as np
import cupy as cp
rng = np.random.default_rng(3)
tolerance = 1e-6
{code}
got = cp.asnumpy(got)
print("RESULT", "ok" if np.allclose(got, want, rtol=tolerance, atol=tolerance) else "wrong: %r vs %r" % (got.ravel()[:3], np.ravel(want)[:3]))
"""

failures = []
for name, (accelerators, code, libraries) in CASES.items():
    env = dict(os.environ, CUPY_COMPILE_WITH_PTX="1", CUPY_ACCELERATORS=accelerators)
    child = subprocess.run([sys.executable, "-c", CHILD.format(code=code)], env=env,
                           capture_output=True, text=True, timeout=600)
    result = next((line[7:] for line in child.stdout.splitlines() if line.startswith("RESULT ")), None)
    pvgpu_lines = [line for line in child.stderr.splitlines() if line.startswith("[libcuda")]
    named = [line for line in pvgpu_lines if any(lib in line for lib in libraries)]
    if result == "ok":
        verdict = "works"
    elif result is not None:
        verdict = "WRONG RESULT without an error: " + result
    elif child.returncode != 0 and named:
        verdict = "refused, and pvgpu says why: " + named[0]
    else:
        error = (child.stderr.strip().splitlines() or ["(no output)"])[-1]
        verdict = "FAILED without naming %s: %s" % (" or ".join(libraries), error)
    print("%-45s %s" % (name, verdict))
    if verdict.startswith(("WRONG", "FAILED")):
        failures.append(name)
        sys.stdout.write("".join("    | %s\n" % line for line in pvgpu_lines[-5:]))

assert not failures, failures
print("CuPy features backed by NVIDIA libraries and precompiled kernels: each works or says why")
