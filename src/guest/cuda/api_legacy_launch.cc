// Driver API: the launch interface of CUDA 2.x, deprecated but still what pycuda calls before
// every launch (cuFuncSetBlockShape) and what its Function objects wrap for older programs.
// The block shape, the dynamic shared memory size and the parameter buffer are state of the
// function (LegacyLaunchState, objects.h); cuLaunch, cuLaunchGrid and cuLaunchGridAsync
// launch with them through cuLaunchKernel's body, the buffer passed as
// CU_LAUNCH_PARAM_BUFFER_POINTER.
//
// The parameter buffer is the kernel's parameters laid out as in device code: the caller
// chooses each offset, aligned to its parameter's type as the device-side layout has it (the
// ALIGN_UP idiom of CUDA 2.x's programming guide), and pvgpu copies to the offsets it is
// given. It is checked at launch against the layout the kernel declares: a buffer shorter than
// the kernel's parameters is refused. CUDA calls a legacy launch after cuLaunchKernel without
// setting the state again undefined; pvgpu keeps the state, so it launches with the last one.
#include <cstring>
#include <vector>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// The largest parameter list a kernel may have (CUDA 12.1 and later on the GPUs pvgpu's
// devices describe); the legacy interface's own limit was 4 KiB.
constexpr unsigned int kMaxParamBytes = 32764;

// Copies `bytes` bytes to `offset` in the function's parameter buffer.
Code WriteParam(CUfunc_st* f, int offset, const void* data, size_t bytes) {
  MutexLock lock(&f->legacy_mutex);
  const size_t size = f->legacy.params.size();
  if (offset < 0 || static_cast<size_t>(offset) > size || bytes > size - offset) {
    return Code::kInvalidValue;
  }
  if (bytes > 0) std::memcpy(f->legacy.params.data() + offset, data, bytes);
  return Code::kOk;
}

Code LaunchLegacy(CUfunc_st* f, int grid_width, int grid_height, const StreamRef& stream) {
  if (grid_width <= 0 || grid_height <= 0) return Code::kInvalidValue;
  LegacyLaunchState state;
  {
    MutexLock lock(&f->legacy_mutex);
    state = f->legacy;  // a copy: another thread may set the next launch's state meanwhile
  }
  size_t size = state.params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, state.params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return api::LaunchKernel(f, static_cast<unsigned>(grid_width), static_cast<unsigned>(grid_height),
                           1, state.block[0], state.block[1], state.block[2], state.shared_bytes,
                           stream, nullptr, size > 0 ? extra : nullptr);
}

}  // namespace

namespace api {

// Checked now against the device's and the kernel's limits, as the driver does (an oversized
// block fails here with CUDA_ERROR_INVALID_VALUE), and again at launch.
Code FuncSetBlockShape(CUfunc_st* hfunc, int x, int y, int z) {
  const int* a = DriverState::Get().device(hfunc->module->ctx->device)->info.attributes;
  if (x <= 0 || y <= 0 || z <= 0 || x > a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
      y > a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] || z > a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z]) {
    return Code::kInvalidValue;
  }
  const uint32_t kernel_max = hfunc->kernel->max_threads_per_block;
  const int64_t threads = int64_t{x} * y * z;
  if (threads > a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] ||
      (kernel_max != 0 && threads > kernel_max)) {
    return Code::kInvalidValue;
  }
  MutexLock lock(&hfunc->legacy_mutex);
  hfunc->legacy.block[0] = static_cast<unsigned>(x);
  hfunc->legacy.block[1] = static_cast<unsigned>(y);
  hfunc->legacy.block[2] = static_cast<unsigned>(z);
  return Code::kOk;
}

// Checked at launch, with the function's static shared memory and opt-in limit.
Code FuncSetSharedSize(CUfunc_st* hfunc, unsigned int bytes) {
  MutexLock lock(&hfunc->legacy_mutex);
  hfunc->legacy.shared_bytes = bytes;
  return Code::kOk;
}

// Sizes the buffer; bytes already written stay, new ones are zero.
Code ParamSetSize(CUfunc_st* hfunc, unsigned int numbytes) {
  if (numbytes > kMaxParamBytes) return Code::kInvalidValue;
  MutexLock lock(&hfunc->legacy_mutex);
  hfunc->legacy.params.resize(numbytes, 0);
  return Code::kOk;
}

Code ParamSeti(CUfunc_st* hfunc, int offset, unsigned int value) {
  return WriteParam(hfunc, offset, &value, sizeof(value));
}

Code ParamSetf(CUfunc_st* hfunc, int offset, float value) {
  return WriteParam(hfunc, offset, &value, sizeof(value));
}

Code ParamSetv(CUfunc_st* hfunc, int offset, void* ptr, unsigned int numbytes) {
  return WriteParam(hfunc, offset, ptr, numbytes);
}

// A grid of one block, on the legacy default stream.
Code Launch(CUfunc_st* f) { return LaunchGrid(f, 1, 1); }

Code LaunchGrid(CUfunc_st* f, int grid_width, int grid_height) {
  StreamRef stream;
  if (Code code = DefaultStream(&stream); code != Code::kOk) return code;
  return LaunchLegacy(f, grid_width, grid_height, stream);
}

Code LaunchGridAsync(CUfunc_st* f, int grid_width, int grid_height, const StreamRef& hStream) {
  return LaunchLegacy(f, grid_width, grid_height, hStream);
}

}  // namespace api
}  // namespace pvgpu::guest
