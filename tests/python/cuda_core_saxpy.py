"""cuda.core (NVIDIA's Pythonic CUDA API, PyPI) through pvgpu: NVRTC compiles a kernel to PTX,
cuda.core loads it, allocates from the device's memory resource on a stream, launches, and the
result is checked against NumPy."""
import numpy as np
from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

dev = Device()
dev.set_current()
s = dev.create_stream()
code = r'''
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
'''
arch = "".join(str(v) for v in dev.compute_capability)
prog = Program(code, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
mod = prog.compile("ptx")
ker = mod.get_kernel("saxpy")
n = 1 << 16
mr = dev.memory_resource
x = np.random.rand(n).astype(np.float32)
y = np.random.rand(n).astype(np.float32)
bx = mr.allocate(x.nbytes, stream=s)
by = mr.allocate(y.nbytes, stream=s)
from cuda.bindings import driver
driver.cuMemcpyHtoDAsync(int(bx.handle), x.ctypes.data, x.nbytes, s.handle)
driver.cuMemcpyHtoDAsync(int(by.handle), y.ctypes.data, y.nbytes, s.handle)
config = LaunchConfig(grid=(n + 255) // 256, block=256)
launch(s, config, ker, np.float32(2.0), bx, by, np.uint64(n))
out = np.empty_like(y)
driver.cuMemcpyDtoHAsync(out.ctypes.data, int(by.handle), y.nbytes, s.handle)
s.sync()
assert np.allclose(out, 2 * x + y)
bx.close(s); by.close(s)
print("cuda.core saxpy: OK")
