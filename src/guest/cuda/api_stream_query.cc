// Driver API: what a stream answers about itself (its id, context and device). The capture
// queries are in api_capture.cc.
#include <unordered_map>
#include <utility>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// The calling thread's per-thread default stream in `ctx`: an id made on first use, again when
// the context's host side was made again (a reset context is a new context).
uint64_t PerThreadStreamId(CUctx_st* ctx) {
  thread_local std::unordered_map<CUctx_st*, std::pair<uint64_t, uint64_t>> ids;  // handle, id
  auto& [handle, id] = ids[ctx];
  if (id == 0 || handle != ctx->handle) {
    handle = ctx->handle;
    id = NextObjectId();
  }
  return id;
}

}  // namespace

namespace api {

Code StreamGetId(const StreamRef& hStream, unsigned long long* streamId) {
  if (hStream.object != nullptr) {
    *streamId = hStream.object->id;
  } else if (hStream.handle == CU_STREAM_PER_THREAD) {
    *streamId = PerThreadStreamId(hStream.ctx);
  } else {
    *streamId = hStream.ctx->legacy_stream_id;  // null and CU_STREAM_LEGACY: the same stream
  }
  return Code::kOk;
}

Code StreamGetCtx(const StreamRef& hStream, CUcontext* pctx) {
  *pctx = hStream.ctx;
  return Code::kOk;
}

// pvgpu has no green contexts: every stream belongs to a regular one.
Code StreamGetCtx_v2(const StreamRef& hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  *pCtx = hStream.ctx;
  if (pGreenCtx != nullptr) *pGreenCtx = nullptr;
  return Code::kOk;
}

Code StreamGetDevice(const StreamRef& hStream, CUdevice* device) {
  *device = hStream.ctx->device;
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
