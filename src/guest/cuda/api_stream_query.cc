// Driver API: what a stream answers about itself (its id, context and device) and the stream
// capture queries. pvgpu has no stream capture (graphs are not supported), so a valid stream
// is never capturing; CuPy and PyTorch ask before every copy between host and device.
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

// The thread's stream capture interaction mode (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

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

Code StreamIsCapturing(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus) {
  *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
  return Code::kOk;
}

// Not capturing: the other outputs carry no information (CUDA defines them only for an active
// capture); they are cleared so that a caller reading them anyway sees nothing.
Code StreamGetCaptureInfo_v3(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus_out,
                             cuuint64_t* id_out, CUgraph* graph_out,
                             const CUgraphNode** dependencies_out,
                             const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  if (edgeData_out != nullptr && dependencies_out == nullptr) return Code::kInvalidValue;
  *captureStatus_out = CU_STREAM_CAPTURE_STATUS_NONE;
  if (id_out != nullptr) *id_out = 0;
  if (graph_out != nullptr) *graph_out = nullptr;
  if (dependencies_out != nullptr) *dependencies_out = nullptr;
  if (edgeData_out != nullptr) *edgeData_out = nullptr;
  if (numDependencies_out != nullptr) *numDependencies_out = 0;
  return Code::kOk;
}

Code StreamGetCaptureInfo_v2(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus_out,
                             cuuint64_t* id_out, CUgraph* graph_out,
                             const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  return StreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                                 nullptr, numDependencies_out);
}

Code StreamGetCaptureInfo(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus_out,
                          cuuint64_t* id_out) {
  return StreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr,
                                 nullptr);
}

// The mode only says which calls a capture in progress forbids; with no capture it changes
// nothing else, but it is kept per thread and exchanged as CUDA documents.
Code ThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return Code::kInvalidValue;
  }
  std::swap(*mode, capture_mode);
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
