"""CuPy's user-defined kernels through pvgpu: ElementwiseKernel, ReductionKernel, RawKernel,
RawModule (from CUDA source with C++ templates and name expressions, module globals, and from a
PTX file nvcc wrote at build time), cupy.fuse, and streams, events and page-locked memory. Each
result is checked against NumPy. Kernels reach the device as PTX (CUPY_COMPILE_WITH_PTX=1, see
cupy_arrays.py).

Usage: cupy_kernels.py CLIENT_KERNELS_PTX
"""
import os
import sys

os.environ.setdefault("CUPY_COMPILE_WITH_PTX", "1")
os.environ.setdefault("CUPY_ACCELERATORS", "")

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402

ptx_path = sys.argv[1]
rng = np.random.default_rng(8)
n = 50_001
x_h = rng.standard_normal(n).astype(np.float32)
y_h = rng.standard_normal(n).astype(np.float32)
x, y = cp.asarray(x_h), cp.asarray(y_h)


def close(got, want, rtol=1e-5, atol=1e-5):
    got = cp.asnumpy(got)
    assert np.allclose(got, want, rtol=rtol, atol=atol), (got.ravel()[:4], np.ravel(want)[:4])


# ElementwiseKernel: typed, generic over T, with broadcasting and a raw (indexed) argument.
squared_diff = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)",
                                    "squared_diff")
close(squared_diff(x, y), (x_h - y_h) ** 2)
axpb = cp.ElementwiseKernel("T x, T a, T b", "T z", "z = a * x + b", "axpb")
close(axpb(x.astype(cp.float64), 2.0, -1.0), 2.0 * x_h.astype(np.float64) - 1.0)
grid_h = rng.standard_normal((20, 1)).astype(np.float32)
close(squared_diff(cp.asarray(grid_h), x[:30]), (grid_h - x_h[:30]) ** 2)
reverse = cp.ElementwiseKernel("raw T src, int32 size", "T dst", "dst = src[size - 1 - i]", "reverse")
close(reverse(x, np.int32(n), size=n), x_h[::-1])

# ReductionKernel: an L2 norm along an axis, and a max of absolute values.
l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
m_h = rng.standard_normal((123, 456))
close(l2(cp.asarray(m_h), axis=1), np.linalg.norm(m_h, axis=1), rtol=1e-10)
absmax = cp.ReductionKernel("float32 x", "float32 y", "fabsf(x)", "max(a, b)", "y = a", "0", "absmax")
assert float(absmax(x)) == float(np.abs(x_h).max())

# RawKernel: a grid-stride loop, and dynamic shared memory.
saxpy = cp.RawKernel(r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}""", "saxpy")
out = y.copy()
saxpy((64,), (128,), (np.float32(3.0), x, out, np.int32(n)))
close(out, 3.0 * x_h + y_h)
assert saxpy.attributes["max_threads_per_block"] >= 128, saxpy.attributes
block_sum = cp.RawKernel(r"""
extern "C" __global__ void block_sum(const double* x, double* partial, int n) {
  extern __shared__ double tile[];
  int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
  tile[tid] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) tile[tid] += tile[tid + s];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = tile[0];
}""", "block_sum")
d_h = rng.standard_normal(n)
blocks = (n + 255) // 256
partial = cp.zeros(blocks, dtype=cp.float64)
block_sum((blocks,), (256,), (cp.asarray(d_h), partial, np.int32(n)), shared_mem=256 * 8)
close(partial.sum(), d_h.sum(), rtol=1e-10)

# RawModule from source: C++ templates instantiated through name expressions, a __constant__
# and a __device__ global written from the host.
module = cp.RawModule(code=r"""
template <typename T> __global__ void scale(T* v, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= s;
}
__constant__ float offset[1];
__device__ int hits;
extern "C" __global__ void add_offset(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { v[i] += offset[0]; atomicAdd(&hits, 1); }
}""", options=("-std=c++17",), name_expressions=("scale<float>", "scale<double>"))
v = x.copy()
module.get_function("scale<float>")(((n + 255) // 256,), (256,), (v, np.float32(-2.0), np.int32(n)))
close(v, -2.0 * x_h)
w = cp.asarray(d_h)
module.get_function("scale<double>")(((n + 255) // 256,), (256,), (w, np.float64(0.25), np.int32(n)))
close(w, 0.25 * d_h, rtol=1e-12)
offset = module.get_global("offset")
offset.copy_from_host(np.array([1.5], dtype=np.float32).ctypes.data, 4)
hits = module.get_global("hits")
hits.memset(0, 4)
module.get_function("add_offset")(((n + 255) // 256,), (256,), (v, np.int32(n)))
close(v, -2.0 * x_h + 1.5)
hit_count = np.zeros(1, dtype=np.int32)
hits.copy_to_host(hit_count.ctypes.data, 4)
assert hit_count[0] == n, hit_count

# RawModule from a PTX file that nvcc wrote at build time (cuModuleLoad).
ptx_module = cp.RawModule(path=ptx_path)
scale2d = ptx_module.get_function("scale2d")
mat_h = rng.standard_normal((37, 100)).astype(np.float32)
mat = cp.asarray(mat_h)
scale2d(((100 + 15) // 16, (37 + 7) // 8), (16, 8), (mat, np.int32(100), np.int32(37), np.float32(0.5)))
close(mat, 0.5 * mat_h)

# cupy.fuse: one generated kernel for a whole expression, with a reduction.
@cp.fuse()
def fused(a, b):
    return cp.sum(a * b + cp.sin(a))


close(fused(x, y), np.sum(x_h * y_h + np.sin(x_h)), rtol=1e-3, atol=1e-2)

# Streams, events and page-locked memory: uploads and kernels on two streams, ordered by an
# event, timed by events.
pinned = cp.cuda.alloc_pinned_memory(x_h.nbytes)
staged = np.frombuffer(pinned, dtype=np.float32, count=n)
staged[:] = x_h
first, second = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
start, ready, end = cp.cuda.Event(), cp.cuda.Event(), cp.cuda.Event()
with first:
    start.record()
    src = cp.empty_like(x)
    src.set(staged, stream=first)
    doubled = squared_diff(src, cp.zeros_like(src))
    ready.record()
second.wait_event(ready)
with second:
    result = cp.sqrt(doubled)
    end.record()
back = cp.cuda.alloc_pinned_memory(x_h.nbytes)
back_view = np.frombuffer(back, dtype=np.float32, count=n)
result.get(out=back_view, stream=second)
second.synchronize()
end.synchronize()
assert cp.cuda.get_elapsed_time(start, end) >= 0.0
close(back_view, np.abs(x_h))
assert first.done and second.done

cp.cuda.Device(0).synchronize()
print("CuPy ElementwiseKernel, ReductionKernel, RawKernel, RawModule, fuse, streams and events: OK")
