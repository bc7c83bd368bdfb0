// Driver API: pitched allocations, 2D and 3D copies. A 2D copy is built from the 1D paths: rows
// to the device are posted without waiting (they ride in the ring), rows from the device are
// fetched as one span covering them all and scattered on the guest. A 3D copy is a 2D copy per
// slice.
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

// One 2D copy per slice of a 3D copy between linear memory (host, device, unified).
CUresult Copy3D(const CUDA_MEMCPY3D* p, CUstream stream, bool async) {
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (p == nullptr || p->reserved0 != nullptr || p->reserved1 != nullptr || p->srcLOD != 0 ||
      p->dstLOD != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
    PVGPU_WARN("3D copies with CUDA arrays are not supported");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0) return CUDA_SUCCESS;
  // Slices are srcHeight (dstHeight) rows apart; they must hold the copied rows.
  if (p->Depth > 1 && (p->srcHeight < p->srcY + p->Height || p->dstHeight < p->dstY + p->Height)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t src_slice = p->srcPitch * p->srcHeight, dst_slice = p->dstPitch * p->dstHeight;
  for (size_t z = 0; z < p->Depth; ++z) {
    const size_t src_offset = (p->srcZ + z) * src_slice, dst_offset = (p->dstZ + z) * dst_slice;
    CUDA_MEMCPY2D slice{};
    slice.srcXInBytes = p->srcXInBytes;
    slice.srcY = p->srcY;
    slice.srcMemoryType = p->srcMemoryType;
    slice.srcHost = p->srcHost == nullptr ? nullptr
                                          : static_cast<const uint8_t*>(p->srcHost) + src_offset;
    slice.srcDevice = p->srcDevice == 0 ? 0 : p->srcDevice + src_offset;
    slice.srcPitch = p->srcPitch;
    slice.dstXInBytes = p->dstXInBytes;
    slice.dstY = p->dstY;
    slice.dstMemoryType = p->dstMemoryType;
    slice.dstHost = p->dstHost == nullptr ? nullptr : static_cast<uint8_t*>(p->dstHost) + dst_offset;
    slice.dstDevice = p->dstDevice == 0 ? 0 : p->dstDevice + dst_offset;
    slice.dstPitch = p->dstPitch;
    slice.WidthInBytes = p->WidthInBytes;
    slice.Height = p->Height;
    if (CUresult r = Copy2D(&slice, stream, async); r != CUDA_SUCCESS) return r;
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

CUresult CUDAAPI cuMemcpy3D(const CUDA_MEMCPY3D* pCopy) {
  PVGPU_API_TRACE("cuMemcpy3D_v2", pCopy);
  return Copy3D(pCopy, nullptr, false);
}

CUresult CUDAAPI cuMemcpy3DAsync(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  PVGPU_API_TRACE("cuMemcpy3DAsync_v2", pCopy << ", " << hStream);
  return Copy3D(pCopy, hStream, true);
}

}  // extern "C"
