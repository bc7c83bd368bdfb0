"""cuda-bindings: compile a kernel with NVRTC and launch it through the driver API."""
import ctypes
import numpy as np
from cuda.bindings import driver, nvrtc

def check(result):
    err = result[0]
    if isinstance(err, driver.CUresult) and err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"driver error {err}")
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"nvrtc error {err}")
    return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)

source = b"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
check(driver.cuInit(0))
device = check(driver.cuDeviceGet(0))
prog = check(nvrtc.nvrtcCreateProgram(source, b"saxpy.cu", 0, [], []))
check(nvrtc.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=compute_75"]))
size = check(nvrtc.nvrtcGetPTXSize(prog))
ptx = b" " * size
check(nvrtc.nvrtcGetPTX(prog, ptx))
ctx = check(driver.cuCtxCreate(None, 0, device))
module = check(driver.cuModuleLoadData(ptx))
kernel = check(driver.cuModuleGetFunction(module, b"saxpy"))
n = 4096
x = np.arange(n, dtype=np.float32)
y = np.ones(n, dtype=np.float32)
dx = check(driver.cuMemAlloc(x.nbytes))
dy = check(driver.cuMemAlloc(y.nbytes))
check(driver.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
check(driver.cuMemcpyHtoD(dy, y.ctypes.data, y.nbytes))
args = (np.array([2.0], dtype=np.float32), np.array([int(dx)], dtype=np.uint64),
        np.array([int(dy)], dtype=np.uint64), np.array([n], dtype=np.int32))
params = np.array([a.ctypes.data for a in args], dtype=np.uint64)
check(driver.cuLaunchKernel(kernel, n // 256, 1, 1, 256, 1, 1, 0, 0, params.ctypes.data, 0))
check(driver.cuCtxSynchronize())
out = np.empty_like(y)
check(driver.cuMemcpyDtoH(out.ctypes.data, dy, out.nbytes))
expected = 2.0 * x + 1.0
assert np.allclose(out, expected), (out[:5], expected[:5])
print("cuda-bindings nvrtc saxpy: OK")
