"""numba-cuda kernels through pvgpu: elementwise, device functions, shared memory, atomics,
reductions (a hand-written block reduction and numba's own cuda.reduce), checked against NumPy."""
import math

import numpy as np
from numba import cuda, float32, int32

@cuda.jit(device=True)
def smooth(v):
    return math.sqrt(v * v + 1.0) - 1.0


@cuda.jit
def transform(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = smooth(x[i])


@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]

@cuda.jit
def block_sum(x, out):
    tile = cuda.shared.array(256, dtype=float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    s = 128
    while s > 0:
        if tid < s:
            tile[tid] += tile[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, tile[0])

@cuda.jit
def histogram(data, bins):
    i = cuda.grid(1)
    if i < data.size:
        cuda.atomic.add(bins, data[i] % bins.size, 1)

n = 1 << 16
x = np.random.default_rng(1).random(n, dtype=np.float32)
y = np.random.default_rng(2).random(n, dtype=np.float32)
out = cuda.device_array_like(x)
axpy[(n + 255) // 256, 256](np.float32(3.0), cuda.to_device(x), cuda.to_device(y), out)
assert np.allclose(out.copy_to_host(), 3.0 * x + y, rtol=1e-6)

total = cuda.to_device(np.zeros(1, dtype=np.float32))
block_sum[(n + 255) // 256, 256](cuda.to_device(x), total)
assert abs(total.copy_to_host()[0] - x.sum(dtype=np.float64)) < 1e-2 * n / 1000, total.copy_to_host()

data = np.arange(10000, dtype=np.int32)
bins = cuda.to_device(np.zeros(16, dtype=np.int32))
histogram[(data.size + 127) // 128, 128](cuda.to_device(data), bins)
expected = np.bincount(data % 16, minlength=16)
assert (bins.copy_to_host() == expected).all()
t = cuda.device_array_like(x)
transform[(n + 255) // 256, 256](cuda.to_device(x), t)
assert np.allclose(t.copy_to_host(), np.sqrt(x.astype(np.float64) ** 2 + 1) - 1, rtol=1e-5, atol=1e-6)

sum_reduce = cuda.reduce(lambda a, b: a + b)
values = np.arange(1, 100001, dtype=np.float64)
got = sum_reduce(values)
assert got == values.sum(), (got, values.sum())
max_reduce = cuda.reduce(lambda a, b: max(a, b))
ints = np.random.default_rng(3).integers(0, 1 << 30, 5000).astype(np.int64)
assert max_reduce(ints) == ints.max()

print("numba-cuda kernels: OK")
