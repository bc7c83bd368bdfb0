"""pycuda (PyPI, built from source) through pvgpu, everything short of a kernel launch: device
queries, allocations and copies (pageable and page-locked, synchronous and on streams), memsets,
events, gpuarray transfers, and a module given as PTX (module_from_file, module_from_buffer with
JIT options): its functions, their attributes and its globals. pycuda's default SourceModule,
which asks nvcc for a cubin, must be refused with the cpu adapter's explanation. Results are
checked against NumPy.

Usage: pycuda_memory.py CLIENT_KERNELS_PTX
"""
import sys

import numpy as np
import pycuda.autoinit  # noqa: F401  (creates and pushes a context on device 0)
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray

ptx_path = sys.argv[1]
device = pycuda.autoinit.device
rng = np.random.default_rng(7)

# Device queries.
assert drv.get_version()[0] >= 12, drv.get_version()
assert drv.get_driver_version() >= 12000, drv.get_driver_version()
assert device.name(), "no device name"
assert device.compute_capability() >= (5, 0), device.compute_capability()
assert device.total_memory() > 1 << 20, device.total_memory()
assert device.get_attribute(drv.device_attribute.MAX_THREADS_PER_BLOCK) >= 256
assert device.get_attribute(drv.device_attribute.WARP_SIZE) == 32
free, total = drv.mem_get_info()
assert 0 < free <= total, (free, total)

# Synchronous copies: host -> device -> device -> host.
x = rng.standard_normal(10000).astype(np.float32)
a = drv.mem_alloc(x.nbytes)
b = drv.mem_alloc(x.nbytes)
drv.memcpy_htod(a, x)
drv.memcpy_dtod(b, a, x.nbytes)
back = np.empty_like(x)
drv.memcpy_dtoh(back, b)
assert np.array_equal(back, x)

# Memsets of each width, then a partial copy at an offset into the allocation.
words = np.empty(1000, dtype=np.uint32)
drv.memset_d32(a, 0xDEADBEEF, 1000)
drv.memcpy_dtoh(words, a)
assert np.all(words == 0xDEADBEEF)
drv.memset_d16(a, 0x1234, 2000)
drv.memcpy_dtoh(words, a)
assert np.all(words == 0x12341234)
drv.memset_d8(a, 0x7F, 4000)
drv.memcpy_dtoh(words, a)
assert np.all(words == 0x7F7F7F7F)
drv.memcpy_htod(int(a) + 400, x[:100])
head = np.empty(100, dtype=np.float32)
drv.memcpy_dtoh(head, int(a) + 400)
assert np.array_equal(head, x[:100])

# Page-locked memory, copies on two streams ordered by an event, and timing between events.
pinned_in = drv.pagelocked_empty(x.shape, x.dtype)
pinned_in[:] = x
pinned_out = drv.pagelocked_zeros_like(pinned_in)
upload, download = drv.Stream(), drv.Stream()
start, uploaded, end = drv.Event(), drv.Event(), drv.Event()
start.record(upload)
drv.memcpy_htod_async(a, pinned_in, upload)
uploaded.record(upload)
download.wait_for_event(uploaded)
drv.memcpy_dtoh_async(pinned_out, a, download)
end.record(download)
end.synchronize()
assert end.query() and upload.is_done() and download.is_done()
assert np.array_equal(pinned_out, x)
assert end.time_since(start) >= 0.0

# Host memory registered with the device (cuMemHostAlloc with flags).
mapped = drv.pagelocked_empty(256, np.float32, mem_flags=drv.host_alloc_flags.PORTABLE)
mapped[:] = np.arange(256, dtype=np.float32)
drv.memcpy_htod(a, mapped)
drv.memcpy_dtoh(head, a)
assert np.array_equal(head, mapped[:100])

# gpuarray transfers (no kernels): to_gpu, get, set, and asynchronous versions on a stream.
g = gpuarray.to_gpu(x)
assert g.shape == x.shape and g.dtype == x.dtype and g.nbytes == x.nbytes
assert np.array_equal(g.get(), x)
y = rng.standard_normal(10000).astype(np.float32)
g.set(y)
assert np.array_equal(g.get(), y)
s = drv.Stream()
h = gpuarray.to_gpu_async(pinned_in, stream=s)
result = h.get_async(stream=s)
s.synchronize()
assert np.array_equal(result, x)

# A module given as PTX, from a file and from a buffer with JIT options and a log.
module = drv.module_from_file(ptx_path)
saxpy = module.get_function("saxpy")
assert saxpy.num_regs >= 0 and saxpy.max_threads_per_block >= 256, saxpy.max_threads_per_block
with open(ptx_path, "rb") as f:
    ptx = f.read()
log = []
module2 = drv.module_from_buffer(
    ptx, options=[(drv.jit_option.MAX_REGISTERS, 64)], message_handler=lambda ok, info, err: log.append(ok))
assert log == [True], log
block_sum = module2.get_function("block_sum")
assert block_sum.get_attribute(drv.function_attribute.MAX_THREADS_PER_BLOCK) >= 256

# Module globals: write a __device__ array and a __constant__ through cuModuleGetGlobal, read
# them back.
table_ptr, table_size = module.get_global("table")
coeffs_ptr, coeffs_size = module.get_global("coeffs")
assert (table_size, coeffs_size) == (64, 16), (table_size, coeffs_size)
table = np.arange(16, dtype=np.float32) * 0.5
drv.memcpy_htod(table_ptr, table)
table_back = np.empty_like(table)
drv.memcpy_dtoh(table_back, table_ptr)
assert np.array_equal(table_back, table)
try:
    module.get_function("no_such_kernel")
    raise AssertionError("a missing function was found")
except drv.LogicError as e:
    assert "cuModuleGetFunction" in str(e), e

# pycuda's default SourceModule asks nvcc for a cubin (machine code for one GPU): the cpu adapter
# refuses it with CUDA_ERROR_NO_BINARY_FOR_GPU and says why in the JIT error log.
from pycuda.compiler import SourceModule  # noqa: E402

try:
    SourceModule("__global__ void twice(float* a) { a[threadIdx.x] *= 2; }")
    refused = None
except (drv.RuntimeError, drv.Error) as e:
    refused = str(e)
if refused is None:
    print("pycuda: this adapter runs cubins (a GPU); skipping the cpu adapter's refusal check")
else:
    assert "no kernel image" in refused and "PTX" in refused, refused

for p in (a, b):
    p.free()
print("pycuda memory, transfers, streams, events and PTX modules: OK")
