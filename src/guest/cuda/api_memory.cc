// Driver API: device memory (allocation, release, queries) and memsets.
//
// The guest records every allocation with its context (Objects::device_memory), so that ranges
// are checked at the call and cuMemGetAddressRange needs no round trip. Memsets are posted
// without waiting.
#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/managed.h"
#include "guest/cuda/mem_pool.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

constexpr size_t kPitchAlignment = 512;

Code Memset(CUdeviceptr dst, size_t pitch, uint32_t value, uint32_t element, size_t width,
            size_t height, const StreamRef& stream) {
  if (width == 0 || height == 0) return Code::kOk;
  if (dst % element != 0) return Code::kInvalidValue;
  if (height > 1 && pitch < width * element) return Code::kInvalidValue;
  if (CaptureActive()) {  // a capturing stream records a memset node
    auto node = std::make_unique<CUgraphNode_st>();
    node->type = CU_GRAPH_NODE_TYPE_MEMSET;
    node->memset = {dst, height > 1 ? pitch : width * element, value, element, width, height};
    node->ctx = stream.ctx;
    if (auto captured = CaptureNode(stream, std::move(node))) return *captured;
  }
  const size_t extent = (height - 1) * pitch + width * element;
  CUctx_st* owner = nullptr;
  if (Code code = OwnerOf(dst, extent, &owner); code != Code::kOk) return code;
  const StreamRef target = StreamFor(owner, stream);
  protocol::MemsetRequest request;
  request.ctx = owner->handle;
  request.stream = target.wire();
  request.dst = dst;
  request.pitch = height > 1 ? pitch : width * element;
  request.value = value;
  request.element_size = element;
  request.width = width;
  request.height = height;
  uint64_t seq = 0;
  if (Code code = owner->client->Post(request, {}, &seq); code != Code::kOk) return code;
  NoteSubmitted(target, seq);
  return Code::kOk;
}

// A memset on the legacy default stream (the synchronous forms).
Code Memset(CUdeviceptr dst, size_t pitch, uint32_t value, uint32_t element, size_t width,
            size_t height) {
  StreamRef stream;
  if (Code code = DefaultStream(&stream); code != Code::kOk) return code;
  return Memset(dst, pitch, value, element, width, height, stream);
}

}  // namespace

Code AllocateDevice(CUctx_st* ctx, size_t bytesize, CUdeviceptr* dptr) {
  if (bytesize == 0) return Code::kInvalidValue;
  protocol::MemAllocRequest request;
  request.ctx = ctx->handle;
  request.size = bytesize;
  protocol::MemAllocReply reply;
  if (Code code = ctx->client->Call(request, {}, &reply); code != Code::kOk) return code;
  objects().device_memory.Assign(reply.dptr, bytesize, ctx);
  *dptr = reply.dptr;
  return Code::kOk;
}

Code ReleaseDevice(CUdeviceptr dptr) {
  auto allocation = objects().device_memory.FindBase(dptr);
  if (!allocation.has_value()) return Code::kInvalidValue;
  CUctx_st* owner = allocation->value;
  if (!LiveContext(owner)) return Code::kContextIsDestroyed;
  protocol::MemFreeRequest request;
  request.ctx = owner->handle;
  request.dptr = dptr;
  const Code code = owner->client->Call(request);
  if (code == Code::kOk || code == Code::kInvalidValue) objects().device_memory.TakeBase(dptr);
  return code;
}

namespace api {

Code MemAlloc_v2(CUctx_st* ctx, CUdeviceptr* dptr, size_t bytesize) {
  if (Code code = CheckUnsafeCall(); code != Code::kOk) return code;
  return AllocateDevice(ctx, bytesize, dptr);
}

Code MemAllocPitch_v2(CUctx_st* ctx, CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                      size_t Height, unsigned int ElementSizeBytes) {
  if (WidthInBytes == 0 || Height == 0 ||
      (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)) {
    return Code::kInvalidValue;
  }
  const size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (Height > SIZE_MAX / pitch) return Code::kInvalidValue;
  if (Code code = MemAlloc_v2(ctx, dptr, pitch * Height); code != Code::kOk) return code;
  *pPitch = pitch;
  return Code::kOk;
}

Code MemFree_v2(CUdeviceptr dptr) {
  if (Code code = CheckUnsafeCall(); code != Code::kOk) return code;
  if (dptr == 0) return Code::kOk;
  if (Code code; FreeManaged(dptr, &code)) return code;
  if (Code code; FreePoolAllocation(dptr, &code)) return code;
  if (Code code; FreeGraphAllocation(dptr, &code)) return code;
  return ReleaseDevice(dptr);
}

Code MemGetInfo_v2(CUctx_st* ctx, size_t* free, size_t* total) {
  protocol::MemGetInfoRequest request;
  request.ctx = ctx->handle;
  protocol::MemGetInfoReply reply;
  if (Code code = ctx->client->Call(request, {}, &reply); code != Code::kOk) return code;
  *free = reply.free;
  *total = reply.total;
  return Code::kOk;
}

Code MemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  uint64_t base = 0, size = 0;
  if (auto allocation = objects().device_memory.Find(dptr)) {
    base = allocation->base;
    size = allocation->size;
  } else if (auto mapped = objects().vmm_mapped.Find(dptr)) {  // the cuMemMap holding it
    base = mapped->base;
    size = mapped->size;
  } else {
    return Code::kNotFound;
  }
  if (pbase != nullptr) *pbase = base;
  if (psize != nullptr) *psize = size;
  return Code::kOk;
}

Code MemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return Memset(dstDevice, 0, uc, 1, N, 1);
}

Code MemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return Memset(dstDevice, 0, us, 2, N, 1);
}

Code MemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return Memset(dstDevice, 0, ui, 4, N, 1);
}

Code MemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, const StreamRef& hStream) {
  return Memset(dstDevice, 0, uc, 1, N, 1, hStream);
}

Code MemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, const StreamRef& hStream) {
  return Memset(dstDevice, 0, us, 2, N, 1, hStream);
}

Code MemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, const StreamRef& hStream) {
  return Memset(dstDevice, 0, ui, 4, N, 1, hStream);
}

Code MemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                   size_t Height) {
  return Memset(dstDevice, dstPitch, uc, 1, Width, Height);
}

Code MemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                    size_t Height) {
  return Memset(dstDevice, dstPitch, us, 2, Width, Height);
}

Code MemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                    size_t Height) {
  return Memset(dstDevice, dstPitch, ui, 4, Width, Height);
}

}  // namespace api
}  // namespace pvgpu::guest
