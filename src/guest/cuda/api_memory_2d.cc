// Driver API: 2D and 3D copies. A 2D copy is built from the 1D paths: rows
// to the device are posted without waiting (they ride in the ring), rows from the device are
// fetched as one span covering them all and scattered on the guest. A 3D copy is a 2D copy per
// slice. An array operand is its level's memory at the address the host gave (arrays.h).
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "guest/cuda/arrays.h"
#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

struct Side {
  bool device = false;
  CUdeviceptr dptr = 0;  // first byte of the copy on the device
  uint8_t* host = nullptr;
  size_t pitch = 0;
};

Code Resolve(CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y,
             size_t pitch, Side* side) {
  bool is_device = type == CU_MEMORYTYPE_DEVICE;
  if (type == CU_MEMORYTYPE_UNIFIED) is_device = FindAllocation(device, 1).has_value();
  if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED) {
    return Code::kInvalidValue;
  }
  side->device = is_device;
  side->pitch = pitch;
  const size_t offset = y * pitch + x;
  if (is_device) {
    side->dptr = device + offset;
  } else {
    const uint8_t* base = type == CU_MEMORYTYPE_UNIFIED ? reinterpret_cast<const uint8_t*>(device)
                                                        : static_cast<const uint8_t*>(host);
    if (base == nullptr) return Code::kInvalidValue;
    side->host = const_cast<uint8_t*>(base) + offset;
  }
  return Code::kOk;
}

// Makes an array operand of a copy device memory: the box's first byte, the level's pitch and
// rows per slice; the box must lie inside the level.
Code ArrayAsDevice(CUarray handle, size_t* x, size_t* y, size_t* z, size_t width, size_t height,
                   size_t depth, CUmemorytype* type, CUdeviceptr* dptr, size_t* pitch,
                   size_t* rows) {
  Ref<CUarray_st> array;
  if (Code code = FindArray(handle, &array); code != Code::kOk) return code;
  ArrayRegion region;
  if (Code code = ArrayRegionOf(*array, *x, *y, z ? *z : 0, width, height, depth, &region);
      code != Code::kOk) {
    return code;
  }
  *type = CU_MEMORYTYPE_DEVICE;
  *dptr = region.dptr;
  *pitch = region.pitch;
  if (rows != nullptr) *rows = region.rows;
  *x = *y = 0;
  if (z != nullptr) *z = 0;
  return Code::kOk;
}

// `stream` is resolved for asynchronous copies; synchronous ones resolve the default stream
// when a side is device memory.
Code Copy2D(const CUDA_MEMCPY2D* given, const StreamRef* stream, bool async) {
  const size_t width = given->WidthInBytes, height = given->Height;
  if (width == 0 || height == 0) return Code::kOk;
  CUDA_MEMCPY2D copy = *given;
  CUDA_MEMCPY2D* p = &copy;
  if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY) {
    if (Code code = ArrayAsDevice(p->srcArray, &p->srcXInBytes, &p->srcY, nullptr, width, height,
                                  1, &p->srcMemoryType, &p->srcDevice, &p->srcPitch, nullptr);
        code != Code::kOk) {
      return code;
    }
  }
  if (p->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
    if (Code code = ArrayAsDevice(p->dstArray, &p->dstXInBytes, &p->dstY, nullptr, width, height,
                                  1, &p->dstMemoryType, &p->dstDevice, &p->dstPitch, nullptr);
        code != Code::kOk) {
      return code;
    }
  }
  if (height > 1 && (p->srcPitch < width || p->dstPitch < width)) return Code::kInvalidValue;
  Side src, dst;
  if (Code code = Resolve(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                          p->srcPitch, &src);
      code != Code::kOk) {
    return code;
  }
  if (Code code = Resolve(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
                          p->dstPitch, &dst);
      code != Code::kOk) {
    return code;
  }
  StreamRef default_stream;
  if (stream == nullptr && (src.device || dst.device)) {
    if (Code code = DefaultStream(&default_stream); code != Code::kOk) return code;
    stream = &default_stream;
  }
  if (src.device && !dst.device && height > 1) {
    // One span from the first row's start to the last row's end, then scattered.
    const size_t span = (height - 1) * src.pitch + width;
    std::vector<uint8_t> staging(span);
    Code code = CopyDtoH(staging.data(), src.dptr, span, *stream, async);
    if (code == Code::kOk && async) code = SynchronizeStream(*stream);
    if (code != Code::kOk) return code;
    for (size_t row = 0; row < height; ++row) {
      std::memcpy(dst.host + row * dst.pitch, staging.data() + row * src.pitch, width);
    }
    return Code::kOk;
  }
  for (size_t row = 0; row < height; ++row) {
    const size_t s = row * src.pitch, d = row * dst.pitch;
    Code code = Code::kOk;
    if (src.device && dst.device) {
      code = CopyDtoD(dst.dptr + d, src.dptr + s, width, *stream);
    } else if (dst.device) {
      code = CopyHtoD(dst.dptr + d, src.host + s, width, *stream, async);
    } else if (src.device) {
      code = CopyDtoH(dst.host + d, src.dptr + s, width, *stream, async);
    } else {
      std::memmove(dst.host + d, src.host + s, width);
    }
    if (code != Code::kOk) return code;
  }
  return Code::kOk;
}

// One 2D copy per slice of a 3D copy between linear memory (host, device, unified).
Code Copy3D(const CUDA_MEMCPY3D* given, const StreamRef* stream, bool async) {
  if (given->reserved0 != nullptr || given->reserved1 != nullptr || given->srcLOD != 0 ||
      given->dstLOD != 0) {
    return Code::kInvalidValue;
  }
  if (given->WidthInBytes == 0 || given->Height == 0 || given->Depth == 0) return Code::kOk;
  CUDA_MEMCPY3D copy = *given;
  CUDA_MEMCPY3D* p = &copy;
  if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY) {
    if (Code code = ArrayAsDevice(p->srcArray, &p->srcXInBytes, &p->srcY, &p->srcZ,
                                  p->WidthInBytes, p->Height, p->Depth, &p->srcMemoryType,
                                  &p->srcDevice, &p->srcPitch, &p->srcHeight);
        code != Code::kOk) {
      return code;
    }
  }
  if (p->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
    if (Code code = ArrayAsDevice(p->dstArray, &p->dstXInBytes, &p->dstY, &p->dstZ,
                                  p->WidthInBytes, p->Height, p->Depth, &p->dstMemoryType,
                                  &p->dstDevice, &p->dstPitch, &p->dstHeight);
        code != Code::kOk) {
      return code;
    }
  }
  // Slices are srcHeight (dstHeight) rows apart; they must hold the copied rows.
  if (p->Depth > 1 && (p->srcHeight < p->srcY + p->Height || p->dstHeight < p->dstY + p->Height)) {
    return Code::kInvalidValue;
  }
  const size_t src_slice = p->srcPitch * p->srcHeight, dst_slice = p->dstPitch * p->dstHeight;
  for (size_t z = 0; z < p->Depth; ++z) {
    const size_t src_offset = (p->srcZ + z) * src_slice, dst_offset = (p->dstZ + z) * dst_slice;
    CUDA_MEMCPY2D slice{};
    slice.srcXInBytes = p->srcXInBytes;
    slice.srcY = p->srcY;
    slice.srcMemoryType = p->srcMemoryType;
    slice.srcHost =
        p->srcHost == nullptr ? nullptr : static_cast<const uint8_t*>(p->srcHost) + src_offset;
    slice.srcDevice = p->srcDevice == 0 ? 0 : p->srcDevice + src_offset;
    slice.srcPitch = p->srcPitch;
    slice.dstXInBytes = p->dstXInBytes;
    slice.dstY = p->dstY;
    slice.dstMemoryType = p->dstMemoryType;
    slice.dstHost =
        p->dstHost == nullptr ? nullptr : static_cast<uint8_t*>(p->dstHost) + dst_offset;
    slice.dstDevice = p->dstDevice == 0 ? 0 : p->dstDevice + dst_offset;
    slice.dstPitch = p->dstPitch;
    slice.WidthInBytes = p->WidthInBytes;
    slice.Height = p->Height;
    if (Code code = Copy2D(&slice, stream, async); code != Code::kOk) return code;
  }
  return Code::kOk;
}

// A 2D or 3D copy on a capturing stream is one memcpy node (not one per row, and never a
// copy through a staging buffer that would be gone when the graph runs).
std::optional<Code> CaptureCopy3D(const CUDA_MEMCPY3D& copy, const StreamRef& stream) {
  auto node = std::make_unique<CUgraphNode_st>();
  node->type = CU_GRAPH_NODE_TYPE_MEMCPY;
  node->copy = copy;
  node->ctx = stream.ctx;
  return CaptureNode(stream, std::move(node));
}

}  // namespace

namespace api {

Code Memcpy2D_v2(const CUDA_MEMCPY2D* pCopy) { return Copy2D(pCopy, nullptr, false); }

Code Memcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) { return Copy2D(pCopy, nullptr, false); }

Code Memcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, const StreamRef& hStream) {
  if (CaptureActive()) {
    CUDA_MEMCPY3D c{};
    c.srcXInBytes = pCopy->srcXInBytes;
    c.srcY = pCopy->srcY;
    c.srcMemoryType = pCopy->srcMemoryType;
    c.srcHost = pCopy->srcHost;
    c.srcDevice = pCopy->srcDevice;
    c.srcPitch = pCopy->srcPitch;
    c.dstXInBytes = pCopy->dstXInBytes;
    c.dstY = pCopy->dstY;
    c.dstMemoryType = pCopy->dstMemoryType;
    c.dstHost = pCopy->dstHost;
    c.dstDevice = pCopy->dstDevice;
    c.dstPitch = pCopy->dstPitch;
    c.WidthInBytes = pCopy->WidthInBytes;
    c.Height = pCopy->Height;
    c.Depth = 1;
    if (auto captured = CaptureCopy3D(c, hStream)) return *captured;
  }
  return Copy2D(pCopy, &hStream, true);
}

Code Memcpy3D_v2(const CUDA_MEMCPY3D* pCopy) { return Copy3D(pCopy, nullptr, false); }

Code Memcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, const StreamRef& hStream) {
  if (CaptureActive()) {
    if (auto captured = CaptureCopy3D(*pCopy, hStream)) return *captured;
  }
  return Copy3D(pCopy, &hStream, true);
}

namespace {

// A peer copy names its contexts; device addresses already say which memory is whose, and a
// copy between contexts is staged by the 1D paths.
CUDA_MEMCPY3D FromPeer(const CUDA_MEMCPY3D_PEER& p) {
  CUDA_MEMCPY3D c{};
  c.srcXInBytes = p.srcXInBytes;
  c.srcY = p.srcY;
  c.srcZ = p.srcZ;
  c.srcLOD = p.srcLOD;
  c.srcMemoryType = p.srcMemoryType;
  c.srcHost = p.srcHost;
  c.srcDevice = p.srcDevice;
  c.srcArray = p.srcArray;
  c.srcPitch = p.srcPitch;
  c.srcHeight = p.srcHeight;
  c.dstXInBytes = p.dstXInBytes;
  c.dstY = p.dstY;
  c.dstZ = p.dstZ;
  c.dstLOD = p.dstLOD;
  c.dstMemoryType = p.dstMemoryType;
  c.dstHost = p.dstHost;
  c.dstDevice = p.dstDevice;
  c.dstArray = p.dstArray;
  c.dstPitch = p.dstPitch;
  c.dstHeight = p.dstHeight;
  c.WidthInBytes = p.WidthInBytes;
  c.Height = p.Height;
  c.Depth = p.Depth;
  return c;
}

}  // namespace

Code Memcpy3DPeer(const CUDA_MEMCPY3D_PEER* pCopy) {
  const CUDA_MEMCPY3D copy = FromPeer(*pCopy);
  return Copy3D(&copy, nullptr, false);
}

Code Memcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* pCopy, const StreamRef& hStream) {
  const CUDA_MEMCPY3D copy = FromPeer(*pCopy);
  return Copy3D(&copy, &hStream, true);
}

}  // namespace api
}  // namespace pvgpu::guest
