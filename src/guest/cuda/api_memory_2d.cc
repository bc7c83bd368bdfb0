// Driver API: pitched allocations and 2D copies. A 2D copy is built from the 1D paths: rows
// to the device are posted without waiting (they ride in the ring), rows from the device are
// fetched as one span covering them all and scattered on the guest.
#include <algorithm>
#include <cstring>
#include <vector>

#include "guest/cuda/state.h"

using pvgpu::guest::DriverState;

namespace {

constexpr size_t kPitchAlignment = 512;

struct Side {
  bool device = false;
  CUdeviceptr dptr = 0;  // first byte of the copy on the device
  uint8_t* host = nullptr;
  size_t pitch = 0;
};

CUresult Resolve(CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y,
                 size_t pitch, Side* side) {
  if (type == CU_MEMORYTYPE_ARRAY) {
    PVGPU_WARN("2D copies with CUDA arrays are not supported");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  bool is_device = type == CU_MEMORYTYPE_DEVICE;
  if (type == CU_MEMORYTYPE_UNIFIED) is_device = pvgpu::guest::FindAllocation(device, 1);
  if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE &&
      type != CU_MEMORYTYPE_UNIFIED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  side->device = is_device;
  side->pitch = pitch;
  const size_t offset = y * pitch + x;
  if (is_device) {
    side->dptr = device + offset;
  } else {
    const uint8_t* base =
        type == CU_MEMORYTYPE_UNIFIED ? reinterpret_cast<const uint8_t*>(device)
                                      : static_cast<const uint8_t*>(host);
    if (base == nullptr) return CUDA_ERROR_INVALID_VALUE;
    side->host = const_cast<uint8_t*>(base) + offset;
  }
  return CUDA_SUCCESS;
}

CUresult Copy2D(const CUDA_MEMCPY2D* p, CUstream stream, bool async) {
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const size_t width = p->WidthInBytes, height = p->Height;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (height > 1 && (p->srcPitch < width || p->dstPitch < width)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Side src, dst;
  if (CUresult r = Resolve(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                           p->srcPitch, &src);
      r != CUDA_SUCCESS) {
    return r;
  }
  if (CUresult r = Resolve(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
                           p->dstPitch, &dst);
      r != CUDA_SUCCESS) {
    return r;
  }
  if (src.device && !dst.device && height > 1) {
    // One span from the first row's start to the last row's end, then scattered.
    const size_t span = (height - 1) * src.pitch + width;
    std::vector<uint8_t> staging(span);
    CUresult r = async ? cuMemcpyDtoHAsync(staging.data(), src.dptr, span, stream)
                       : cuMemcpyDtoH(staging.data(), src.dptr, span);
    if (r == CUDA_SUCCESS && async) r = cuStreamSynchronize(stream);
    if (r != CUDA_SUCCESS) return r;
    for (size_t row = 0; row < height; ++row) {
      std::memcpy(dst.host + row * dst.pitch, staging.data() + row * src.pitch, width);
    }
    return CUDA_SUCCESS;
  }
  for (size_t row = 0; row < height; ++row) {
    CUresult r = CUDA_SUCCESS;
    if (src.device && dst.device) {
      r = async ? cuMemcpyDtoDAsync(dst.dptr + row * dst.pitch, src.dptr + row * src.pitch,
                                    width, stream)
                : cuMemcpyDtoD(dst.dptr + row * dst.pitch, src.dptr + row * src.pitch, width);
    } else if (dst.device) {
      r = async ? cuMemcpyHtoDAsync(dst.dptr + row * dst.pitch, src.host + row * src.pitch,
                                    width, stream)
                : cuMemcpyHtoD(dst.dptr + row * dst.pitch, src.host + row * src.pitch, width);
    } else if (src.device) {
      r = async ? cuMemcpyDtoHAsync(dst.host + row * dst.pitch, src.dptr + row * src.pitch,
                                    width, stream)
                : cuMemcpyDtoH(dst.host + row * dst.pitch, src.dptr + row * src.pitch, width);
    } else {
      std::memmove(dst.host + row * dst.pitch, src.host + row * src.pitch, width);
    }
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                 size_t Height, unsigned int ElementSizeBytes) {
  PVGPU_API_TRACE("cuMemAllocPitch_v2", dptr << ", " << pPitch << ", " << WidthInBytes << ", "
                                              << Height << ", " << ElementSizeBytes);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (dptr == nullptr || pPitch == nullptr || WidthInBytes == 0 || Height == 0 ||
      (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (Height > SIZE_MAX / pitch) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = cuMemAlloc(dptr, pitch * Height); r != CUDA_SUCCESS) return r;
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D* pCopy) {
  PVGPU_API_TRACE("cuMemcpy2D_v2", pCopy);
  return Copy2D(pCopy, nullptr, false);
}

CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D* pCopy) {
  PVGPU_API_TRACE("cuMemcpy2DUnaligned_v2", pCopy);
  return Copy2D(pCopy, nullptr, false);
}

CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  PVGPU_API_TRACE("cuMemcpy2DAsync_v2", pCopy << ", " << hStream);
  return Copy2D(pCopy, hStream, true);
}

}  // extern "C"
