"""pycuda kernel launches through pvgpu, with every kernel given to the driver as PTX:

- nvcc -ptx at build time, loaded with module_from_file and module_from_buffer;
- pycuda.compiler.compile(..., target="ptx") and module_from_buffer;
- SourceModule with options=["--ptx", "-o", "kernel.cubin"] (SourceModule always runs
  `nvcc --cubin OPTIONS kernel.cu` and reads kernel.cubin back; a later --ptx wins over --cubin,
  so the file holds PTX);
- DynamicModule, which compiles to PTX and links with the driver's cuLink* calls.

Launches: Function.__call__ with In/Out/InOut arguments and device pointers, 1-D and 2-D grids,
dynamic shared memory, time_kernel, prepared_call, prepared_timed_call and prepared_async_call
on a stream. pycuda calls cuFuncSetBlockShape before every one of these launches (then launches
with cuLaunchKernel). Results are checked against NumPy.

Usage: pycuda_kernels.py CLIENT_KERNELS_PTX
"""
import sys

import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
from pycuda.compiler import DynamicModule, SourceModule, compile as compile_cuda

ptx_path = sys.argv[1]
rng = np.random.default_rng(11)
n = 1 << 14
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)

# Build-time PTX, from a file: saxpy with In/InOut arguments.
module = drv.module_from_file(ptx_path)
saxpy = module.get_function("saxpy")
out = y.copy()
saxpy(np.float32(2.5), drv.In(x), drv.InOut(out), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1))
assert np.allclose(out, 2.5 * x + y, rtol=1e-6, atol=1e-5), out[:4]

# The same PTX from a buffer; device pointers, a partial last block, dynamic shared memory.
with open(ptx_path, "rb") as f:
    module2 = drv.module_from_buffer(f.read())
block_sum = module2.get_function("block_sum")
m = n - 100
blocks = (m + 255) // 256
partial = np.zeros(blocks, dtype=np.float32)
dx = drv.to_device(x)
block_sum(dx, drv.Out(partial), np.int32(m), block=(256, 1, 1), grid=(blocks, 1), shared=256 * 4)
assert np.isclose(partial.sum(dtype=np.float64), x[:m].sum(dtype=np.float64), atol=1e-2), partial.sum()
assert np.allclose(partial[:-1], x[: 256 * (blocks - 1)].reshape(-1, 256).sum(axis=1), atol=1e-3)

# A 2-D grid over a matrix whose size is not a multiple of the block, timed.
w, h = 100, 37
mat = rng.standard_normal((h, w)).astype(np.float32)
scaled = mat.copy()
scale2d = module.get_function("scale2d")
seconds = scale2d(drv.InOut(scaled), np.int32(w), np.int32(h), np.float32(-3.0),
                  block=(16, 8, 1), grid=((w + 15) // 16, (h + 7) // 8), time_kernel=True)
assert seconds >= 0.0
assert np.allclose(scaled, -3.0 * mat)

# Module globals written from the host before a launch reads them.
table = np.linspace(0, 1, 16).astype(np.float32)
coeffs = np.array([1.5, -2.0, 0, 0], dtype=np.float32)
drv.memcpy_htod(module.get_global("table")[0], table)
drv.memcpy_htod(module.get_global("coeffs")[0], coeffs)
apply_globals = module.get_function("apply_globals")
res = np.empty_like(x)
apply_globals(drv.In(x), drv.Out(res), np.int32(n), block=(128, 1, 1), grid=(n // 128, 1))
assert np.allclose(res, 1.5 - 2.0 * x + table[np.arange(n) % 16], rtol=1e-5, atol=1e-5)

# Prepared calls: synchronous, timed, and asynchronous on a stream with page-locked memory.
saxpy.prepare("fPPi")
dy = drv.to_device(y)
saxpy.prepared_call((n // 256, 1), (256, 1, 1), 1.0, dx, dy, n)
took = saxpy.prepared_timed_call((n // 256, 1), (256, 1, 1), 1.0, dx, dy, n)
assert took() >= 0.0
stream = drv.Stream()
saxpy.prepared_async_call((n // 256, 1), (256, 1, 1), stream, -1.0, dx, dy, n)
host = drv.pagelocked_empty_like(y)
drv.memcpy_dtoh_async(host, dy, stream)
stream.synchronize()
assert np.allclose(host, x + y, rtol=1e-5, atol=1e-6), host[:4]

# pycuda's own compiler, asked for PTX.
source = """
__global__ void square_plus(float* a, float c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * a[i] + c;
}
"""
ptx = compile_cuda(source, target="ptx")
assert ptx.lstrip().startswith(b"//"), ptx[:40]
sq = drv.module_from_buffer(ptx).get_function("square_plus")
v = x.copy()
sq(drv.InOut(v), np.float32(0.5), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1))
assert np.allclose(v, x * x + 0.5, rtol=1e-6, atol=1e-5)

# SourceModule made to hand PTX to the driver.
sq2 = SourceModule(source, options=["--ptx", "-o", "kernel.cubin"]).get_function("square_plus")
v = x.copy()
sq2(drv.InOut(v), np.float32(-1.0), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1))
assert np.allclose(v, x * x - 1.0, rtol=1e-6, atol=1e-5)

# DynamicModule: PTX linked by the driver's JIT linker (cuLinkCreate / cuLinkAddData /
# cuLinkComplete).
dyn = DynamicModule()
dyn.add_source(source, nvcc_options=[])
dyn.link()
sq3 = dyn.get_function("square_plus")
v = x.copy()
sq3(drv.InOut(v), np.float32(2.0), np.int32(n), block=(256, 1, 1), grid=(n // 256, 1))
assert np.allclose(v, x * x + 2.0, rtol=1e-6, atol=1e-5)

print("pycuda kernels from PTX (files, buffers, compile, SourceModule, DynamicModule): OK")
