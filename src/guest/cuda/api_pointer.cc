// Driver API: pointer attributes and unified-address copies. With unified addressing a pointer
// names its memory: device allocations (and module globals and mapped pinned memory) are in
// the guest's allocation table, pinned host memory in its region table, anything else is
// ordinary host memory.
#include <cstring>

#include "guest/cuda/state.h"

using pvgpu::guest::DriverState;

namespace {

struct PointerInfo {
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  CUctx_st* ctx = nullptr;
  uintptr_t base = 0;
  size_t size = 0;
  bool known = false;  // allocated or registered through the driver
};

PointerInfo Classify(CUdeviceptr ptr) {
  PointerInfo info;
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  auto it = state.allocations.upper_bound(ptr);
  if (it != state.allocations.begin()) {
    --it;
    if (ptr - it->first < it->second.first) {
      info = {CU_MEMORYTYPE_DEVICE, it->second.second, it->first, it->second.first, true};
      return info;
    }
  }
  auto region = state.pinned.upper_bound(ptr);
  if (region != state.pinned.begin()) {
    --region;
    if (ptr - region->first < region->second->size) {
      info = {CU_MEMORYTYPE_HOST, nullptr, region->first, region->second->size, true};
    }
  }
  return info;
}

CUresult GetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr,
                      const PointerInfo& info) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = info.ctx;
      return info.known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned int*>(data) = info.type;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (!info.known || info.type != CU_MEMORYTYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!info.known || info.type != CU_MEMORYTYPE_HOST) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<int*>(data) = 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<int*>(data) = info.known ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      if (!info.known || info.ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<int*>(data) = info.ctx->device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned long long*>(data) = info.base;  // unique while the buffer lives
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = info.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<size_t*>(data) = info.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned int*>(data) = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<unsigned long long*>(data) = 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      if (!info.known) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = nullptr;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                       CUdeviceptr ptr) {
  PVGPU_API_TRACE("cuPointerGetAttribute", data << ", " << static_cast<int>(attribute) << ", 0x"
                                                << std::hex << ptr);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return GetAttribute(data, attribute, ptr, Classify(ptr));
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute* attributes, void** data,
                                        CUdeviceptr ptr) {
  PVGPU_API_TRACE("cuPointerGetAttributes", numAttributes << ", 0x" << std::hex << ptr);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (numAttributes > 0 && (attributes == nullptr || data == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const PointerInfo info = Classify(ptr);
  for (unsigned int i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) continue;
    // Unlike the single-attribute call, an unknown pointer is not an error here: each value
    // reports "not applicable" (zero), as the driver API documents.
    if (GetAttribute(data[i], attributes[i], ptr, info) != CUDA_SUCCESS) {
      if (attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ||
          attributes[i] == CU_POINTER_ATTRIBUTE_ACCESS_FLAGS) {
        *static_cast<unsigned int*>(data[i]) = 0;
      } else if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
        *static_cast<int*>(data[i]) = -2;
      } else if (attributes[i] == CU_POINTER_ATTRIBUTE_CONTEXT ||
                 attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER ||
                 attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
                 attributes[i] == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE) {
        *static_cast<void**>(data[i]) = nullptr;
      } else if (attributes[i] > CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID + 1) {
        return CUDA_ERROR_INVALID_VALUE;
      } else {
        *static_cast<int*>(data[i]) = 0;
      }
    }
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  PVGPU_API_TRACE("cuMemcpy", "0x" << std::hex << dst << ", 0x" << src << ", " << std::dec << bytes);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  const PointerInfo d = Classify(dst);
  const PointerInfo s = Classify(src);
  const bool dst_device = d.known && d.type == CU_MEMORYTYPE_DEVICE;
  const bool src_device = s.known && s.type == CU_MEMORYTYPE_DEVICE;
  if (dst_device && src_device) return cuMemcpyDtoD(dst, src, bytes);
  if (dst_device) return cuMemcpyHtoD(dst, reinterpret_cast<const void*>(src), bytes);
  if (src_device) return cuMemcpyDtoH(reinterpret_cast<void*>(dst), src, bytes);
  if (bytes > 0 && (dst == 0 || src == 0)) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  PVGPU_API_TRACE("cuMemcpyAsync", "0x" << std::hex << dst << ", 0x" << src << ", " << std::dec << bytes);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  const PointerInfo d = Classify(dst);
  const PointerInfo s = Classify(src);
  const bool dst_device = d.known && d.type == CU_MEMORYTYPE_DEVICE;
  const bool src_device = s.known && s.type == CU_MEMORYTYPE_DEVICE;
  if (dst_device && src_device) return cuMemcpyDtoDAsync(dst, src, bytes, stream);
  if (dst_device) return cuMemcpyHtoDAsync(dst, reinterpret_cast<const void*>(src), bytes, stream);
  if (src_device) return cuMemcpyDtoHAsync(reinterpret_cast<void*>(dst), src, bytes, stream);
  // Host to host is ordered with the stream's earlier work, so wait for it first.
  if (CUresult r = cuStreamSynchronize(stream); r != CUDA_SUCCESS) return r;
  if (bytes > 0 && (dst == 0 || src == 0)) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

}  // extern "C"
