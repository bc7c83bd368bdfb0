"""CuPy's random numbers through pvgpu: the Generator API (cupy.random.default_rng), whose
kernels ship precompiled in CuPy's wheel (with PTX, which the cpu adapter runs), and CuPy's
NVRTC-compiled kernels on its output. Checked for reproducibility and against the
distributions' moments and histograms with NumPy.

The legacy API (cupy.random.rand, RandomState, and every cupy.random.* function that uses the
global RandomState) draws from cuRAND's host API instead, whose kernels the cpu adapter cannot
run; cupy_nvidia_libraries.py covers it.
"""
import os

os.environ.setdefault("CUPY_COMPILE_WITH_PTX", "1")
os.environ.setdefault("CUPY_ACCELERATORS", "")

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

size = 400_000


def moments(v, mean, std, tol):
    v = cp.asnumpy(v).astype(np.float64)
    assert abs(v.mean() - mean) < tol * std and abs(v.std() - std) < tol * std, (v.mean(), v.std())


# Same seed, same numbers; another seed, other numbers.
a = cp.random.default_rng(1234).random(1000)
b = cp.random.default_rng(1234).random(1000)
c = cp.random.default_rng(4321).random(1000)
assert cp.array_equal(a, b) and not cp.array_equal(a, c)

rng = cp.random.default_rng(99)
u = rng.random(size).get()
assert u.dtype == np.float64 and u.min() >= 0.0 and u.max() < 1.0
moments(u, 0.5, np.sqrt(1 / 12), 0.01)
counts = np.histogram(u, bins=20, range=(0, 1))[0]
assert counts.min() > 0.95 * size / 20 and counts.max() < 1.05 * size / 20, counts
u32 = rng.random(size, dtype=cp.float32).get()
assert u32.dtype == np.float32 and u32.min() >= 0.0 and u32.max() < 1.0
moments(u32, 0.5, np.sqrt(1 / 12), 0.01)

moments(rng.standard_normal(size), 0.0, 1.0, 0.01)
normal = rng.standard_normal(size).get()
assert abs(np.mean(np.abs(normal) < 1.0) - 0.6827) < 0.005  # the one-sigma mass
moments(rng.exponential(size=size), 1.0, 1.0, 0.01)
moments(rng.standard_exponential(size, dtype=cp.float32), 1.0, 1.0, 0.01)
moments(rng.gamma(4.0, size=size), 4.0, 2.0, 0.02)
moments(rng.poisson(6.0, size=size), 6.0, np.sqrt(6.0), 0.02)
moments(rng.binomial(20, 0.3, size=size), 6.0, np.sqrt(20 * 0.3 * 0.7), 0.02)
moments(rng.uniform(-3.0, 5.0, size), 1.0, 8 / np.sqrt(12), 0.01)

ints = rng.integers(-5, 17, size=size).get()
assert ints.min() == -5 and ints.max() == 16, (ints.min(), ints.max())
assert np.bincount(ints + 5).min() > 0.9 * size / 22

# CuPy's own kernels on those numbers: a Monte Carlo estimate of pi.
xy = rng.random((2, size))
pi = float(4 * cp.mean(xy[0] ** 2 + xy[1] ** 2 < 1.0))
assert abs(pi - np.pi) < 0.02, pi

print("CuPy random numbers (Generator API): OK")
