// Driver API: streams and host functions in streams. Creation and destruction are posted
// without waiting; queries read the shared completion fence and send nothing.
#include <algorithm>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/host_func.h"
#include "guest/cuda/mem_pool.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// Fence value that marks all work submitted so far on `stream`. Work runs in submission order
// on the host, so the context's last submission bounds the legacy default stream, which
// synchronizes with every other stream.
uint64_t LastSeq(const StreamRef& stream) {
  if (stream.handle == CU_STREAM_PER_THREAD) return PerThreadStreamSeq(stream.ctx);
  return stream.object != nullptr ? stream.object->last_seq.load() : stream.ctx->last_seq.load();
}

struct HostFuncCall {
  CUhostFn fn;
  void* data;
};

struct StreamCallback {
  CUstreamCallback callback;
  CUstream stream;
  void* data;
};

// Enqueues `call` after the work submitted so far on `stream`. Not ordered after earlier host
// functions here: the queue runs them in order anyway.
void EnqueueOnStream(const StreamRef& stream, HostCall call, void* data) {
  const unsigned int flags = stream.object != nullptr ? stream.object->flags : 0;
  // A non-blocking stream follows only its own work; the default stream and blocking streams
  // follow everything submitted before (the host runs a context in order).
  const uint64_t after = (flags & CU_STREAM_NON_BLOCKING) != 0 ? stream.object->last_seq.load()
                                                               : stream.ctx->last_seq.load();
  EnqueueHostFunc(stream.ctx, stream.handle, flags, after, call, data);
}

}  // namespace

Code SynchronizeStream(const StreamRef& stream) {
  // A round trip collects the first asynchronous error of the stream, unless the shared fence
  // and fault count already say the work is done and nothing failed.
  return SynchronizeContext(stream.ctx, LastSeq(stream), [&] {
    protocol::StreamSynchronizeRequest request;
    request.ctx = stream.ctx->handle;
    request.stream = stream.wire();
    return stream.ctx->client->Call(request);
  });
}

namespace api {

Code StreamCreateWithPriority(CUctx_st* ctx, CUstream* phStream, unsigned int flags, int priority) {
  if ((flags & ~CU_STREAM_NON_BLOCKING) != 0) return Code::kInvalidValue;
  auto stream = std::make_shared<CUstream_st>();
  stream->ctx = ctx;
  stream->flags = flags;
  // Priorities are clamped to the device's range [-5, 0], as the driver does.
  stream->priority = std::max(-5, std::min(0, priority));
  stream->handle = Client::NewHandle();
  stream->id = NextObjectId();
  protocol::StreamCreateRequest request;
  request.ctx = ctx->handle;
  request.stream = stream->handle;
  request.flags = flags;
  request.priority = stream->priority;
  if (Code code = ctx->client->Post(request); code != Code::kOk) return code;
  *phStream = objects().streams.Add(std::move(stream));
  return Code::kOk;
}

Code StreamCreate(CUctx_st* ctx, CUstream* phStream, unsigned int Flags) {
  return StreamCreateWithPriority(ctx, phStream, Flags, 0);
}

Code StreamDestroy_v2(CUstream_st* hStream) {
  ForgetCapturingStream(hStream);
  return DestroyPosted(objects().streams, hStream, &protocol::StreamDestroyRequest::stream);
}

Code StreamQuery(const StreamRef& hStream) {
  if (Code code = CheckCaptureWait(hStream); code != Code::kOk) return code;
  if (HostFuncsPending(hStream.ctx, hStream.handle)) return Code::kNotReady;
  return hStream.ctx->client->Done(LastSeq(hStream)) ? Code::kOk : Code::kNotReady;
}

Code StreamSynchronize(const StreamRef& hStream) {
  if (Code code = CheckCaptureWait(hStream); code != Code::kOk) return code;
  const Code code = SynchronizeStream(hStream);
  if (code == Code::kOk) ReleasePoolMemoryAfterSync(hStream.ctx);
  return code;
}

Code StreamGetPriority(const StreamRef& hStream, int* priority) {
  *priority = hStream.object != nullptr ? hStream.object->priority : 0;
  return Code::kOk;
}

Code StreamGetFlags(const StreamRef& hStream, unsigned int* flags) {
  *flags = hStream.object != nullptr ? hStream.object->flags : 0;
  return Code::kOk;
}

Code LaunchHostFunc(const StreamRef& hStream, CUhostFn fn, void* userData) {
  if (CaptureActive()) {  // a capturing stream records a host node
    auto node = std::make_unique<CUgraphNode_st>();
    node->type = CU_GRAPH_NODE_TYPE_HOST;
    node->host = {fn, userData};
    if (auto captured = CaptureNode(hStream, std::move(node))) return *captured;
  }
  EnqueueOnStream(
      hStream,
      [](void* data, CUresult) {
        auto* c = static_cast<HostFuncCall*>(data);
        c->fn(c->data);
        delete c;
      },
      new HostFuncCall{fn, userData});
  return Code::kOk;
}

Code StreamAddCallback(const StreamRef& hStream, CUstreamCallback callback, void* userData,
                       unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  // Not capturable in CUDA (cuLaunchHostFunc is): refused on a capturing stream.
  if (Code code = CheckCaptureWait(hStream); code != Code::kOk) return code;
  EnqueueOnStream(
      hStream,
      [](void* data, CUresult status) {
        auto* c = static_cast<StreamCallback*>(data);
        c->callback(c->stream, status, c->data);
        delete c;
      },
      new StreamCallback{callback, hStream.handle, userData});
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
