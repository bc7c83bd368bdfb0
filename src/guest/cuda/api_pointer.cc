// Driver API: pointer attributes and unified-address copies. With unified addressing a pointer
// names its memory: device allocations (and module globals and mapped pinned memory) are in
// the guest's allocation table, pinned host memory in its region table, anything else is
// ordinary host memory.
#include <cstring>

#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/managed.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

struct PointerInfo {
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  CUctx_st* ctx = nullptr;
  uintptr_t base = 0;
  size_t size = 0;
  bool known = false;    // allocated or registered through the driver
  bool managed = false;  // cuMemAllocManaged: one address for host and device
};

PointerInfo Classify(CUdeviceptr ptr) {
  if (auto memory = objects().device_memory.Find(ptr)) {
    return {CU_MEMORYTYPE_DEVICE, memory->value, memory->base, memory->size, true, IsManaged(ptr)};
  }
  if (auto mapped = objects().vmm_mapped.Find(ptr); mapped.has_value() && mapped->value.accessible) {
    return {CU_MEMORYTYPE_DEVICE, mapped->value.ctx, mapped->base, mapped->size, true};
  }
  if (auto region = objects().pinned.Find(ptr)) {
    return {CU_MEMORYTYPE_HOST, nullptr, region->base, region->size, true};
  }
  return {};
}

bool IsDevice(const PointerInfo& info) { return info.known && info.type == CU_MEMORYTYPE_DEVICE; }

// Writes `value` as a T into `data` when the attribute applies to the pointer (`applies`).
template <typename T>
Code Put(void* data, bool applies, T value) {
  if (!applies) return Code::kInvalidValue;
  *static_cast<T*>(data) = value;
  return Code::kOk;
}

Code GetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr,
                  const PointerInfo& info) {
  const bool known = info.known;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = info.ctx;  // null for memory of no context
      return known ? Code::kOk : Code::kInvalidValue;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return Put<unsigned int>(data, known, info.type);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      return Put<CUdeviceptr>(data, known && info.type == CU_MEMORYTYPE_DEVICE, ptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      return Put<void*>(data, known && (info.type == CU_MEMORYTYPE_HOST || info.managed),
                        reinterpret_cast<void*>(ptr));
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      return Put<int>(data, known, info.managed ? 1 : 0);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      return Put<int>(data, known, 0);
    case CU_POINTER_ATTRIBUTE_MAPPED:
      return Put<int>(data, true, known ? 1 : 0);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      return Put<int>(data, known && info.ctx != nullptr,
                      info.ctx != nullptr ? info.ctx->device : 0);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      return Put<unsigned long long>(data, known, info.base);  // unique while the buffer lives
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      return Put<CUdeviceptr>(data, known, info.base);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      return Put<size_t>(data, known, info.size);
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      return Put<unsigned int>(data, known, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      return Put<unsigned long long>(data, known, 0);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      return Put<void*>(data, known, nullptr);
    default:
      return Code::kInvalidValue;
  }
}

}  // namespace

namespace api {

Code PointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return GetAttribute(data, attribute, ptr, Classify(ptr));
}

Code PointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                          CUdeviceptr ptr) {
  const PointerInfo info = Classify(ptr);
  for (unsigned int i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) continue;
    // Unlike the single-attribute call, an unknown pointer is not an error here: each value
    // reports "not applicable" (zero), as the driver API documents.
    if (GetAttribute(data[i], attributes[i], ptr, info) != Code::kOk) {
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
        return Code::kInvalidValue;
      } else {
        *static_cast<int*>(data[i]) = 0;
      }
    }
  }
  return Code::kOk;
}

// With unified addressing a copy between any two pointers: each side is device memory or not.
Code Memcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  const bool dst_device = IsDevice(Classify(dst));
  const bool src_device = IsDevice(Classify(src));
  if (dst_device || src_device) {
    StreamRef stream;
    if (Code code = DefaultStream(&stream); code != Code::kOk) return code;
    if (dst_device && src_device) return CopyDtoD(dst, src, ByteCount, stream);
    if (dst_device) {
      return CopyHtoD(dst, reinterpret_cast<const void*>(src), ByteCount, stream, false);
    }
    return CopyDtoH(reinterpret_cast<void*>(dst), src, ByteCount, stream, false);
  }
  if (ByteCount > 0 && (dst == 0 || src == 0)) return Code::kInvalidValue;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), ByteCount);
  return Code::kOk;
}

Code MemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, const StreamRef& hStream) {
  const bool dst_device = IsDevice(Classify(dst));
  const bool src_device = IsDevice(Classify(src));
  if (dst_device && src_device) return CopyDtoD(dst, src, ByteCount, hStream);
  if (dst_device) {
    return CopyHtoD(dst, reinterpret_cast<const void*>(src), ByteCount, hStream, true);
  }
  if (src_device) return CopyDtoH(reinterpret_cast<void*>(dst), src, ByteCount, hStream, true);
  // Host to host is ordered with the stream's earlier work, so wait for it first.
  if (Code code = SynchronizeStream(hStream); code != Code::kOk) return code;
  if (ByteCount > 0 && (dst == 0 || src == 0)) return Code::kInvalidValue;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), ByteCount);
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
