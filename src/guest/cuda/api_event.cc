// Driver API: events, and streams waiting on them. Creation, recording and destruction are
// posted without waiting; queries read the shared completion fence and send nothing.
#include <mutex>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/mem_pool.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest::api {

Code EventCreate(CUctx_st* ctx, CUevent* phEvent, unsigned int Flags) {
  constexpr unsigned int kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if ((Flags & ~kKnown) != 0) return Code::kInvalidValue;
  if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return Code::kInvalidValue;
  }
  auto event = std::make_shared<CUevent_st>();
  event->ctx = ctx;
  event->flags = Flags;
  event->handle = Client::NewHandle();
  protocol::EventCreateRequest request;
  request.ctx = ctx->handle;
  request.event = event->handle;
  request.flags = Flags;
  if (Code code = ctx->client->Post(request); code != Code::kOk) return code;
  *phEvent = objects().events.Add(std::move(event));
  return Code::kOk;
}

Code EventDestroy_v2(CUevent_st* hEvent) {
  return DestroyPosted(objects().events, hEvent, &protocol::EventDestroyRequest::event);
}

Code EventRecord(CUevent_st* hEvent, const StreamRef& hStream) {
  if (hEvent->ctx != hStream.ctx) return Code::kInvalidHandle;
  if (CaptureActive()) {  // in a capture: the event marks the stream's position in it
    if (auto captured = CaptureEventRecord(hStream, hEvent, false)) return *captured;
  }
  protocol::EventRecordRequest request;
  request.ctx = hStream.ctx->handle;
  request.event = hEvent->handle;
  request.stream = hStream.wire();
  uint64_t seq = 0;
  if (Code code = hStream.ctx->client->Post(request, {}, &seq); code != Code::kOk) return code;
  hEvent->record_seq = seq;
  NoteSubmitted(hStream, seq);
  return Code::kOk;
}

// CU_EVENT_RECORD_EXTERNAL makes a record an event record node of the graph a stream is
// capturing into (docs/graphs.md); CUDA calls it invalid outside capture.
Code EventRecordWithFlags(CUevent_st* hEvent, const StreamRef& hStream, unsigned int flags) {
  if (flags == CU_EVENT_RECORD_DEFAULT) return EventRecord(hEvent, hStream);
  if (flags != CU_EVENT_RECORD_EXTERNAL) return Code::kInvalidValue;
  if (hEvent->ctx != hStream.ctx) return Code::kInvalidHandle;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (Code code = StreamIsCapturing(hStream, &status); code != Code::kOk) return code;
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return Code::kInvalidValue;
  if (auto captured = CaptureEventRecord(hStream, hEvent, true)) return *captured;
  return Code::kInvalidValue;
}

Code EventQuery(CUevent_st* hEvent) {
  if (EventCaptured(hEvent)) return kCapturedEvent;
  // An event never recorded counts as complete, as in CUDA.
  return hEvent->ctx->client->Done(hEvent->record_seq) ? Code::kOk : Code::kNotReady;
}

Code EventSynchronize(CUevent_st* hEvent) {
  if (EventCaptured(hEvent)) return kCapturedEvent;
  const Code code = hEvent->ctx->client->WaitDone(hEvent->record_seq);
  if (code == Code::kOk) ReleasePoolMemoryAfterSync(hEvent->ctx);
  return code;
}

Code EventElapsedTime_v2(float* pMilliseconds, CUevent_st* hStart, CUevent_st* hEnd) {
  if (hStart->ctx != hEnd->ctx) return Code::kInvalidHandle;
  if (((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return Code::kInvalidHandle;
  }
  const uint64_t start_seq = hStart->record_seq, end_seq = hEnd->record_seq;
  if (start_seq == 0 || end_seq == 0) return Code::kInvalidHandle;
  Client& client = *hStart->ctx->client;
  if (!client.Done(start_seq) || !client.Done(end_seq)) return Code::kNotReady;
  protocol::EventElapsedTimeRequest request;
  request.ctx = hStart->ctx->handle;
  request.start = hStart->handle;
  request.end = hEnd->handle;
  protocol::EventElapsedTimeReply reply;
  if (Code code = client.Call(request, {}, &reply); code != Code::kOk) return code;
  *pMilliseconds = reply.milliseconds;
  return Code::kOk;
}

Code StreamWaitEvent(const StreamRef& hStream, CUevent_st* hEvent, unsigned int Flags) {
  if (Flags != CU_EVENT_WAIT_DEFAULT && Flags != CU_EVENT_WAIT_EXTERNAL) {
    return Code::kInvalidValue;
  }
  if (CaptureActive()) {  // forks and joins of captures
    if (auto captured = CaptureEventWait(hStream, hEvent, Flags)) return *captured;
  }
  // A host runs one session's work in submission order, so work submitted after this call
  // already follows the event's record. Only an event from another host needs a wait here.
  const uint64_t record_seq = hEvent->record_seq;
  if (hEvent->ctx->client == hStream.ctx->client || record_seq == 0) return Code::kOk;
  return hEvent->ctx->client->WaitDone(record_seq);
}

}  // namespace pvgpu::guest::api
