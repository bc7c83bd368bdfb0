"""pycuda's generated kernels through pvgpu: gpuarray arithmetic, cumath, reductions, dot
products, ElementwiseKernel, ReductionKernel, scans and pycuda.curandom, checked against NumPy.

All of these build their kernels with SourceModule, which runs `nvcc --cubin` and loads the
result; the cpu adapter runs PTX only. Two environment variables make SourceModule hand PTX to
the driver without changing any code:

- PYCUDA_DEFAULT_NVCC_FLAGS="--ptx -o kernel.cubin": the options pycuda adds to nvcc whenever
  the caller gives none (gpuarray, cumath, ElementwiseKernel, ReductionKernel and the scans give
  none). A --ptx after pycuda's --cubin wins, and -o keeps the file name pycuda reads back.
- PYCUDA_DISABLE_CACHE=1: pycuda's compiler cache first preprocesses every source that has an
  #include with the same options, which the -o above breaks; without the cache, nothing is
  preprocessed (each process compiles its kernels once).

They are set here before pycuda is imported, so this script runs as is.
"""
import os

os.environ.setdefault("PYCUDA_DEFAULT_NVCC_FLAGS", "--ptx -o kernel.cubin")
os.environ.setdefault("PYCUDA_DISABLE_CACHE", "1")

import numpy as np  # noqa: E402
import pycuda.autoinit  # noqa: E402,F401
import pycuda.cumath as cumath  # noqa: E402
import pycuda.curandom as curandom  # noqa: E402
import pycuda.driver as drv  # noqa: E402
import pycuda.gpuarray as gpuarray  # noqa: E402
from pycuda.elementwise import ElementwiseKernel  # noqa: E402
from pycuda.reduction import ReductionKernel  # noqa: E402
from pycuda.scan import ExclusiveScanKernel, InclusiveScanKernel  # noqa: E402

rng = np.random.default_rng(3)
n = 100_003  # not a multiple of any block size
x = rng.uniform(0.5, 2.0, n).astype(np.float32)
y = rng.uniform(-1.0, 1.0, n).astype(np.float32)
gx, gy = gpuarray.to_gpu(x), gpuarray.to_gpu(y)


def close(got, want, rtol=1e-5, atol=1e-5):
    assert np.allclose(got, want, rtol=rtol, atol=atol), (np.asarray(got).ravel()[:4], np.asarray(want).ravel()[:4])


# Elementwise arithmetic: array-array, array-scalar, in place, comparisons, a strided view.
close((gx + gy).get(), x + y)
close((gx * gy - 2 * gx).get(), x * y - 2 * x)
close((gx / gy).get(), x / y, rtol=1e-4)
close((1.0 / gx).get(), 1.0 / x)
close((gx ** 2).get(), x ** 2)
gz = gx.copy()
gz *= 3
gz += gy
close(gz.get(), 3 * x + y)
close(abs(gy).get(), np.abs(y))
assert np.array_equal((gx > 1.0).get(), (x > 1.0).astype(np.float32))
close(gpuarray.maximum(gx, gy).get(), np.maximum(x, y))
close(gpuarray.if_positive(gy, gx, -gx).get(), np.where(y > 0, x, -x))
close(gx[::3].get(), x[::3])
close(gpuarray.arange(0, 1000, 1, dtype=np.float32).get(), np.arange(0, 1000, dtype=np.float32))
filled = gpuarray.empty(1000, np.int32)
filled.fill(-7)
assert np.all(filled.get() == -7)
doubles = gx.astype(np.float64)
assert doubles.dtype == np.float64
close(doubles.get(), x.astype(np.float64))

# cumath.
close(cumath.sqrt(gx).get(), np.sqrt(x))
close(cumath.exp(gy).get(), np.exp(y))
close(cumath.log(gx).get(), np.log(x))
close(cumath.sin(gy).get(), np.sin(y))
close(cumath.fabs(gy).get(), np.abs(y))

# Reductions.
close(gpuarray.sum(gx).get(), x.sum(dtype=np.float64), rtol=1e-4)
assert float(gpuarray.max(gy).get()) == y.max()
assert float(gpuarray.min(gy).get()) == y.min()
close(gpuarray.dot(gx, gy).get(), np.dot(x.astype(np.float64), y), rtol=1e-3, atol=1e-2)
close(gpuarray.subset_dot(gpuarray.to_gpu(np.arange(0, n, 7, dtype=np.int32)), gx, gy).get(),
      np.dot(x[::7].astype(np.float64), y[::7]), rtol=1e-3, atol=1e-2)
ints = rng.integers(-1000, 1000, n).astype(np.int32)
assert int(gpuarray.sum(gpuarray.to_gpu(ints)).get()) == int(ints.sum())

# ElementwiseKernel: typed arguments, a loop over i, a preamble with a device function.
lin = ElementwiseKernel("float a, float *x, float *y, float *z", "z[i] = a * x[i] + y[i]", "lincomb")
gz = gpuarray.empty_like(gx)
lin(np.float32(-0.5), gx, gy, gz)
close(gz.get(), -0.5 * x + y)
clamp = ElementwiseKernel("double *v, double lo, double hi", "v[i] = clampd(v[i], lo, hi)", "clamp",
                          preamble="__device__ double clampd(double v, double lo, double hi) "
                                   "{ return v < lo ? lo : (v > hi ? hi : v); }")
gd = gpuarray.to_gpu(y.astype(np.float64) * 3)
clamp(gd, -1.0, 1.5)
close(gd.get(), np.clip(y.astype(np.float64) * 3, -1.0, 1.5))

# ReductionKernel: a map and a reduce expression, then a max reduction.
dot = ReductionKernel(np.float64, neutral="0", reduce_expr="a+b", map_expr="(double)x[i]*y[i]",
                      arguments="float *x, float *y")
close(dot(gx, gy).get(), np.dot(x.astype(np.float64), y.astype(np.float64)), rtol=1e-9, atol=1e-9)
absmax = ReductionKernel(np.float32, neutral="0", reduce_expr="fmaxf(a, b)", map_expr="fabsf(v[i])",
                         arguments="float *v")
assert float(absmax(gy).get()) == np.abs(y).max()

# Scans.
seq = rng.integers(0, 10, 5000).astype(np.int32)
gs = gpuarray.to_gpu(seq)
InclusiveScanKernel(np.int32, "a+b")(gs)
assert np.array_equal(gs.get(), np.cumsum(seq))
gs = gpuarray.to_gpu(seq)
ExclusiveScanKernel(np.int32, "a+b", 0)(gs)
assert np.array_equal(gs.get(), np.concatenate(([0], np.cumsum(seq)[:-1])))

# Asynchronous gpuarray work on a stream.
stream = drv.Stream()
ga = gpuarray.to_gpu_async(x, stream=stream)
gb = gpuarray.empty_like(ga)
lin(np.float32(2.0), ga, ga, gb, stream=stream)
got = gb.get_async(stream=stream)
stream.synchronize()
close(got, 3 * x)

# Random numbers: pycuda's MD5-based rand and the XORWOW generator (cuRAND's device API,
# compiled into pycuda's own kernels).
u = curandom.rand((200_000,), dtype=np.float32).get()
assert u.min() >= 0.0 and u.max() <= 1.0 and abs(u.mean() - 0.5) < 0.01, (u.min(), u.max(), u.mean())
gen = curandom.XORWOWRandomNumberGenerator(seed_getter=curandom.seed_getter_uniform)
u = gen.gen_uniform((200_000,), np.float32).get()
assert u.min() > 0.0 and u.max() <= 1.0 and abs(u.mean() - 0.5) < 0.01, (u.min(), u.max(), u.mean())
z = gen.gen_normal((200_000,), np.float32).get()
assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01, (z.mean(), z.std())
counts = np.histogram(u, bins=10, range=(0, 1))[0]
assert counts.min() > 0.9 * len(u) / 10, counts

print("pycuda gpuarray, cumath, reductions, Elementwise/Reduction/Scan kernels, curandom: OK")
