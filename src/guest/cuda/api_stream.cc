// Driver API: streams and events. Creation, recording and destruction are posted without
// waiting; queries read the shared completion fence and send nothing.
#include "guest/cuda/host_func.h"
#include "guest/cuda/state.h"

using pvgpu::Code;
using pvgpu::guest::Client;
using pvgpu::guest::DriverState;
using pvgpu::guest::ToCu;
namespace protocol = pvgpu::protocol;

namespace {

bool LiveStream(CUstream stream) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  return state.streams.count(stream) != 0;
}

bool LiveEvent(CUevent event) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  return event != nullptr && state.events.count(event) != 0 &&
         state.contexts.count(event->ctx) != 0;
}

// Fence value that marks all work submitted so far on `stream` (default stream: the context's).
CUresult LastSeq(CUstream stream, uint64_t* seq, CUctx_st** ctx) {
  uint64_t wire = 0;
  if (CUresult r = pvgpu::guest::ResolveStream(stream, ctx, &wire, /*after_host_funcs=*/false);
      r != CUDA_SUCCESS) {
    return r;
  }
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  // Work runs in submission order on the host, so the context's last submission bounds the
  // default stream, which synchronizes with every other stream (legacy semantics).
  if (stream == CU_STREAM_PER_THREAD) {
    *seq = pvgpu::guest::PerThreadStreamSeq(*ctx);
    return CUDA_SUCCESS;
  }
  *seq = wire == 0 ? (*ctx)->last_seq : stream->last_seq;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  PVGPU_API_TRACE("cuStreamCreateWithPriority", phStream << ", " << flags << ", " << priority);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (phStream == nullptr || (flags & ~CU_STREAM_NON_BLOCKING) != 0) return CUDA_ERROR_INVALID_VALUE;
  // Priorities are clamped to the device's range [-5, 0], as the driver does.
  priority = std::max(-5, std::min(0, priority));
  auto* stream = new CUstream_st();
  stream->ctx = ctx;
  stream->flags = flags;
  stream->priority = priority;
  stream->handle = Client::NewHandle();
  protocol::StreamCreateRequest request;
  request.ctx = ctx->handle;
  request.stream = stream->handle;
  request.flags = flags;
  request.priority = priority;
  if (Code code = ctx->client->Post(request); code != Code::kOk) {
    delete stream;
    return ToCu(code);
  }
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  state.streams.insert(stream);
  *phStream = stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int flags) {
  return cuStreamCreateWithPriority(phStream, flags, 0);
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  PVGPU_API_TRACE("cuStreamDestroy_v2", hStream);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  auto& state = DriverState::Get();
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    if (hStream == nullptr || state.streams.count(hStream) == 0) return CUDA_ERROR_INVALID_HANDLE;
    state.streams.erase(hStream);
  }
  protocol::StreamDestroyRequest request;
  request.ctx = hStream->ctx->handle;
  request.stream = hStream->handle;
  const Code code = hStream->ctx->client->Post(request);
  delete hStream;
  return ToCu(code);
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  PVGPU_API_TRACE("cuStreamQuery", hStream);
  uint64_t seq = 0;
  CUctx_st* ctx = nullptr;
  if (CUresult r = LastSeq(hStream, &seq, &ctx); r != CUDA_SUCCESS) return r;
  if (pvgpu::guest::HostFuncsPending(ctx, hStream)) return CUDA_ERROR_NOT_READY;
  return ctx->client->Done(seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

namespace {

struct HostFuncCall {
  CUhostFn fn;
  void* data;
};

struct StreamCallback {
  CUstreamCallback callback;
  CUstream stream;
  void* data;
};

// Enqueues `call` after the work submitted so far on `hStream`.
CUresult EnqueueOnStream(CUstream hStream, pvgpu::guest::HostCall call, void* data) {
  CUctx_st* ctx = nullptr;
  uint64_t wire = 0;
  // Not ordered after earlier host functions here: the queue runs them in order anyway.
  if (CUresult r = pvgpu::guest::ResolveStream(hStream, &ctx, &wire, /*after_host_funcs=*/false);
      r != CUDA_SUCCESS) {
    return r;
  }
  unsigned int flags = 0;
  uint64_t after = 0;
  {
    auto& state = DriverState::Get();
    std::lock_guard<std::mutex> lock(state.mutex());
    flags = wire == 0 ? 0 : hStream->flags;
    // A non-blocking stream follows only its own work; the default stream and blocking
    // streams follow everything submitted before (the host runs a context in order).
    after = (flags & CU_STREAM_NON_BLOCKING) != 0 ? hStream->last_seq : ctx->last_seq;
  }
  pvgpu::guest::EnqueueHostFunc(ctx, hStream, flags, after, call, data);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  PVGPU_API_TRACE("cuLaunchHostFunc", hStream << ", " << reinterpret_cast<void*>(fn) << ", "
                                              << userData);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* call = new HostFuncCall{fn, userData};
  CUresult r = EnqueueOnStream(
      hStream,
      [](void* data, CUresult) {
        auto* c = static_cast<HostFuncCall*>(data);
        c->fn(c->data);
        delete c;
      },
      call);
  if (r != CUDA_SUCCESS) delete call;
  return r;
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                                     unsigned int flags) {
  PVGPU_API_TRACE("cuStreamAddCallback", hStream << ", " << reinterpret_cast<void*>(callback)
                                                 << ", " << userData << ", " << flags);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* call = new StreamCallback{callback, hStream, userData};
  CUresult r = EnqueueOnStream(
      hStream,
      [](void* data, CUresult status) {
        auto* c = static_cast<StreamCallback*>(data);
        c->callback(c->stream, status, c->data);
        delete c;
      },
      call);
  if (r != CUDA_SUCCESS) delete call;
  return r;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  PVGPU_API_TRACE("cuStreamSynchronize", hStream);
  CUctx_st* ctx = nullptr;
  uint64_t wire = 0;
  if (CUresult r = pvgpu::guest::ResolveStream(hStream, &ctx, &wire); r != CUDA_SUCCESS) return r;
  uint64_t seq = 0;
  if (CUresult r = LastSeq(hStream, &seq, &ctx); r != CUDA_SUCCESS) return r;
  // A round trip collects the first asynchronous error of the stream, unless the shared fence
  // and fault count already say the work is done and nothing failed.
  return pvgpu::guest::SynchronizeContext(ctx, seq, [&] {
    protocol::StreamSynchronizeRequest request;
    request.ctx = ctx->handle;
    request.stream = wire;
    return ToCu(ctx->client->Call(request));
  });
}

CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int* priority) {
  PVGPU_API_TRACE("cuStreamGetPriority", hStream << ", " << priority);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (pvgpu::guest::IsDefaultStream(hStream)) {
    *priority = 0;
    return CUDA_SUCCESS;
  }
  if (!LiveStream(hStream)) return CUDA_ERROR_INVALID_HANDLE;
  *priority = hStream->priority;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  PVGPU_API_TRACE("cuStreamGetFlags", hStream << ", " << flags);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (pvgpu::guest::IsDefaultStream(hStream)) {
    *flags = 0;
    return CUDA_SUCCESS;
  }
  if (!LiveStream(hStream)) return CUDA_ERROR_INVALID_HANDLE;
  *flags = hStream->flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  PVGPU_API_TRACE("cuCtxGetStreamPriorityRange", leastPriority << ", " << greatestPriority);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int flags) {
  PVGPU_API_TRACE("cuEventCreate", phEvent << ", " << flags);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  constexpr unsigned int kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (phEvent == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_INTERPROCESS) != 0 && (flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* event = new CUevent_st();
  event->ctx = ctx;
  event->flags = flags;
  event->handle = Client::NewHandle();
  protocol::EventCreateRequest request;
  request.ctx = ctx->handle;
  request.event = event->handle;
  request.flags = flags;
  if (Code code = ctx->client->Post(request); code != Code::kOk) {
    delete event;
    return ToCu(code);
  }
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  state.events.insert(event);
  *phEvent = event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  PVGPU_API_TRACE("cuEventDestroy_v2", hEvent);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  auto& state = DriverState::Get();
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    if (hEvent == nullptr || state.events.count(hEvent) == 0) return CUDA_ERROR_INVALID_HANDLE;
    state.events.erase(hEvent);
  }
  protocol::EventDestroyRequest request;
  request.ctx = hEvent->ctx->handle;
  request.event = hEvent->handle;
  const Code code = hEvent->ctx->client->Post(request);
  delete hEvent;
  return ToCu(code);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  PVGPU_API_TRACE("cuEventRecord", hEvent << ", " << hStream);
  CUctx_st* ctx = nullptr;
  uint64_t wire = 0;
  if (CUresult r = pvgpu::guest::ResolveStream(hStream, &ctx, &wire); r != CUDA_SUCCESS) return r;
  if (!LiveEvent(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  if (hEvent->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  protocol::EventRecordRequest request;
  request.ctx = ctx->handle;
  request.event = hEvent->handle;
  request.stream = wire;
  uint64_t seq = 0;
  if (Code code = ctx->client->Post(request, {}, &seq); code != Code::kOk) return ToCu(code);
  hEvent->record_seq = seq;
  pvgpu::guest::NoteSubmitted(ctx, hStream, seq);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  PVGPU_API_TRACE("cuEventQuery", hEvent);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveEvent(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  // An event never recorded counts as complete, as in CUDA.
  return hEvent->ctx->client->Done(hEvent->record_seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  PVGPU_API_TRACE("cuEventSynchronize", hEvent);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveEvent(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  return ToCu(hEvent->ctx->client->WaitDone(hEvent->record_seq));
}

CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  PVGPU_API_TRACE("cuEventElapsedTime_v2", pMilliseconds << ", " << hStart << ", " << hEnd);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveEvent(hStart) || !LiveEvent(hEnd)) return CUDA_ERROR_INVALID_HANDLE;
  if (hStart->ctx != hEnd->ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (hStart->record_seq == 0 || hEnd->record_seq == 0) return CUDA_ERROR_INVALID_HANDLE;
  Client& client = *hStart->ctx->client;
  if (!client.Done(hStart->record_seq) || !client.Done(hEnd->record_seq)) {
    return CUDA_ERROR_NOT_READY;
  }
  protocol::EventElapsedTimeRequest request;
  request.ctx = hStart->ctx->handle;
  request.start = hStart->handle;
  request.end = hEnd->handle;
  protocol::EventElapsedTimeReply reply;
  if (Code code = client.Call(request, {}, &reply); code != Code::kOk) return ToCu(code);
  *pMilliseconds = reply.milliseconds;
  return CUDA_SUCCESS;
}

}  // extern "C"
