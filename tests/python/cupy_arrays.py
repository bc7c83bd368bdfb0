"""CuPy (cupy-cuda13x from PyPI) through pvgpu: arrays, transfers, indexing, ufuncs, broadcasting,
type conversion and reductions, each checked against NumPy.

CuPy compiles every kernel at run time with NVRTC. By default it asks NVRTC for a cubin (machine
code for one GPU), which the cpu adapter cannot run; CUPY_COMPILE_WITH_PTX=1 makes it ask for
PTX (`-arch=compute_XY` instead of `-arch=sm_XY`). CuPy also routes reductions and scans through
CUB kernels that ship precompiled in its wheel (the "cub" accelerator, on by default);
CUPY_ACCELERATORS="" keeps the first checks in CuPy's own NVRTC-compiled code, and the last ones
switch CUB on (docs/python-clients.md). Both are set here before CuPy is imported.
"""
import os

os.environ.setdefault("CUPY_COMPILE_WITH_PTX", "1")
os.environ.setdefault("CUPY_ACCELERATORS", "")

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

rng = np.random.default_rng(21)


def close(got, want, rtol=1e-5, atol=1e-6):
    got = cp.asnumpy(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    assert np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True), (got.ravel()[:4], np.ravel(want)[:4])


# The device as CuPy sees it.
dev = cp.cuda.Device(0)
props = cp.cuda.runtime.getDeviceProperties(0)
assert props["name"], props
assert int(dev.compute_capability) >= 50, dev.compute_capability
free, total = cp.cuda.runtime.memGetInfo()
assert 0 < free <= total
assert cp.cuda.runtime.getDeviceCount() >= 1

# Transfers both ways, dtypes, shapes and memory layouts.
for dtype in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.complex64, np.bool_):
    host = (rng.standard_normal((37, 53)) * 100).astype(dtype)
    dev_array = cp.asarray(host)
    assert dev_array.dtype == dtype and dev_array.shape == host.shape
    assert np.array_equal(dev_array.get(), host)
fortran = np.asfortranarray(rng.standard_normal((64, 48)))
assert np.array_equal(cp.asarray(fortran).get(), fortran)
empty = cp.empty((0, 5), dtype=cp.float32)
assert empty.get().shape == (0, 5)

# Creation routines.
close(cp.arange(10, 100, 3, dtype=cp.float32), np.arange(10, 100, 3, dtype=np.float32))
close(cp.linspace(-1, 1, 101), np.linspace(-1, 1, 101))
close(cp.zeros((3, 4)), np.zeros((3, 4)))
close(cp.full((5, 2), 7.5), np.full((5, 2), 7.5))
close(cp.eye(6, k=1), np.eye(6, k=1))
close(cp.identity(4, dtype=cp.int32), np.identity(4, dtype=np.int32))

# Indexing, slicing, strides, views, fancy and boolean indexing, assignment.
a_h = rng.standard_normal((40, 30)).astype(np.float32)
a = cp.asarray(a_h)
close(a[3:17:2, ::-3], a_h[3:17:2, ::-3])
close(a.T, a_h.T)
close(a.reshape(60, 20)[5], a_h.reshape(60, 20)[5])
idx = np.array([0, 5, 5, 39, 12])
close(a[idx], a_h[idx])
close(a[a > 0.5], a_h[a_h > 0.5])
b = a.copy()
b_h = a_h.copy()
b[b < 0] = 0
b_h[b_h < 0] = 0
close(b, b_h)
b[:, 3] = cp.arange(40, dtype=cp.float32)
b_h[:, 3] = np.arange(40, dtype=np.float32)
close(b, b_h)
close(cp.ascontiguousarray(a[:, ::2]), np.ascontiguousarray(a_h[:, ::2]))

# Ufuncs: arithmetic, math, comparisons, logical, bitwise, with broadcasting and type promotion.
x_h = rng.uniform(0.1, 4.0, (64, 1)).astype(np.float32)
y_h = rng.uniform(-2.0, 2.0, (1, 50)).astype(np.float64)
x, y = cp.asarray(x_h), cp.asarray(y_h)
close(x + y, x_h + y_h)
close(x * y - y / x, x_h * y_h - y_h / x_h)
close(x ** 1.5, x_h ** 1.5, rtol=1e-5)
close(cp.sqrt(x), np.sqrt(x_h))
close(cp.exp(y), np.exp(y_h))
close(cp.log1p(x), np.log1p(x_h))
close(cp.sin(y) * cp.cos(x), np.sin(y_h) * np.cos(x_h))
close(cp.arctan2(y, x), np.arctan2(y_h, x_h))
close(cp.tanh(y), np.tanh(y_h))
close(cp.floor(y * 3), np.floor(y_h * 3))
close(cp.maximum(x, y), np.maximum(x_h, y_h))
close(cp.clip(y, -0.5, 0.5), np.clip(y_h, -0.5, 0.5))
assert np.array_equal((x > y).get(), x_h > y_h)
assert np.array_equal(cp.logical_and(x > 1, y < 0).get(), np.logical_and(x_h > 1, y_h < 0))
i_h = rng.integers(0, 1 << 20, 1000).astype(np.int32)
i = cp.asarray(i_h)
assert np.array_equal((i & 0xFF0).get(), i_h & 0xFF0)
assert np.array_equal((i >> 3).get(), i_h >> 3)
assert np.array_equal((i % 7).get(), i_h % 7)
assert np.array_equal((i // 9).get(), i_h // 9)
close(cp.where(y > 0, y, -2 * y), np.where(y_h > 0, y_h, -2 * y_h))
c_h = (rng.standard_normal(100) + 1j * rng.standard_normal(100)).astype(np.complex128)
close(cp.abs(cp.asarray(c_h)) + cp.angle(cp.asarray(c_h)), np.abs(c_h) + np.angle(c_h))
close(cp.asarray(c_h) * cp.asarray(c_h).conj(), c_h * c_h.conj())
close(x.astype(cp.float16).astype(cp.float32), x_h.astype(np.float16).astype(np.float32))
assert np.array_equal(x.astype(cp.int32).get(), x_h.astype(np.int32))

# Reductions over everything and along axes, including argmax and the NaN-aware ones.
r_h = rng.standard_normal((300, 257)).astype(np.float64)
r = cp.asarray(r_h)
close(r.sum(), r_h.sum(), rtol=1e-10)
close(r.sum(axis=0), r_h.sum(axis=0), rtol=1e-10)
close(r.sum(axis=1), r_h.sum(axis=1), rtol=1e-10)
close(r.mean(axis=1), r_h.mean(axis=1), rtol=1e-10)
close(r.var(axis=0), r_h.var(axis=0), rtol=1e-9)
close(r.std(), r_h.std(), rtol=1e-9)
close(r.max(axis=0), r_h.max(axis=0))
close(r.min(), r_h.min())
assert int(r.argmax()) == int(r_h.argmax())
assert np.array_equal(r.argmin(axis=1).get(), r_h.argmin(axis=1))
close(cp.prod(r[:5, :20] + 2, axis=1), np.prod(r_h[:5, :20] + 2, axis=1), rtol=1e-10)
close(cp.linalg.norm(r[0]), np.linalg.norm(r_h[0]), rtol=1e-10)
f_h = rng.standard_normal(100_001).astype(np.float32)
close(cp.asarray(f_h).sum(dtype=cp.float64), f_h.sum(dtype=np.float64), rtol=1e-10)
nan_h = r_h.copy()
nan_h[::7, ::3] = np.nan
close(cp.nansum(cp.asarray(nan_h), axis=0), np.nansum(nan_h, axis=0), rtol=1e-10)
close(cp.nanmax(cp.asarray(nan_h)), np.nanmax(nan_h))
assert bool(cp.all(r < 10)) and bool(cp.any(r > 2)) == bool(np.any(r_h > 2))
assert int(cp.count_nonzero(r > 0)) == int(np.count_nonzero(r_h > 0))
close(cp.cumsum(cp.asarray(f_h[:5000])), np.cumsum(f_h[:5000]), rtol=1e-4, atol=1e-3)
assert np.array_equal(cp.nonzero(cp.asarray(i_h % 13 == 0))[0].get(), np.nonzero(i_h % 13 == 0)[0])

# Joins and shape manipulation.
close(cp.concatenate([x.ravel(), y.ravel()]), np.concatenate([x_h.ravel(), y_h.ravel()]))
close(cp.stack([r[0], r[1]], axis=1), np.stack([r_h[0], r_h[1]], axis=1))
close(cp.tile(cp.arange(3), (2, 2)), np.tile(np.arange(3), (2, 2)))
close(cp.flip(a, axis=0), np.flip(a_h, axis=0))
close(cp.roll(a, 5, axis=1), np.roll(a_h, 5, axis=1))
close(cp.pad(cp.ones((3, 3)), 2), np.pad(np.ones((3, 3)), 2))

# Integer matrix products run in CuPy's own kernels (floating-point ones call cuBLAS, see
# cupy_nvidia_libraries.py).
m_h = rng.integers(-50, 50, (33, 47)).astype(np.int64)
n_h = rng.integers(-50, 50, (47, 29)).astype(np.int64)
assert np.array_equal((cp.asarray(m_h) @ cp.asarray(n_h)).get(), m_h @ n_h)

# Reductions through CUB (CuPy's accelerator): CUB's module needs packed 16-bit min/max and
# half-precision set, and CuPy does not check that it loaded, so a refusal was a silent 0.
from cupy._core import _accelerator  # noqa: E402

saved = (_accelerator.get_routine_accelerators(), _accelerator.get_reduction_accelerators())
_accelerator.set_routine_accelerators(["cub"])
_accelerator.set_reduction_accelerators(["cub"])
v_h = rng.standard_normal(5000)
v = cp.asarray(v_h)
close(v.sum(), v_h.sum())
close(v.max(), v_h.max())
close(cp.asarray(m_h).sum(axis=1), m_h.sum(axis=1))
_accelerator.set_routine_accelerators(saved[0])
_accelerator.set_reduction_accelerators(saved[1])

cp.cuda.Device(0).synchronize()
print("CuPy arrays, ufuncs, broadcasting, indexing and reductions (also through CUB): OK")
