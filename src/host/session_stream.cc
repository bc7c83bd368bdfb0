// Session handlers: streams and events. Both are created by asynchronous messages, so a
// creation the session's limit refuses is an error the guest learns at its next
// synchronization (HandleStore::Refuse keeps the handle's later uses from ending the session).
#include <chrono>

#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

template <typename T>
Outcome Session::RefuseCreation(ContextState& ctx, HandleStore<T>& store, uint64_t id,
                                const char* kind) {
  if (!store.Refuse(id)) {
    // As many refused creations held as the limit: a guest that ignores its errors.
    return Violation(std::string(OpName(static_cast<Op>(current_.op))) + ": " + kind + " " +
                     std::to_string(id) + " past the session's limit of " +
                     std::to_string(store.budget().limit()) + " " + kind +
                     "s, after as many refusals");
  }
  RecordFault(ctx, Error(Code::kOutOfMemory, std::string(kind) + " refused: the session's limit"),
              kind);
  return Code::kOutOfMemory;
}

Outcome Session::Execute(const StreamCreateRequest& request, Span, ContextState& ctx) {
  if (ctx.streams.Add(request.stream, Stream{request.flags, request.priority}) != nullptr) {
    return Code::kOk;
  }
  return RefuseCreation(ctx, ctx.streams, request.stream, "stream");
}

Outcome Session::Execute(const StreamDestroyRequest& request, Span, ContextState& ctx, Stream&) {
  ctx.streams.Erase(request.stream);
  return Code::kOk;
}

Outcome Session::Execute(const StreamSynchronizeRequest&, Span, ContextState& ctx, Stream*) {
  // One stream per context on the adapters: waiting for the context waits for this stream.
  return SynchronizeContext(ctx);
}

Outcome Session::Execute(const EventCreateRequest& request, Span, ContextState& ctx) {
  if (ctx.events.Add(request.event) != nullptr) return Code::kOk;
  return RefuseCreation(ctx, ctx.events, request.event, "event");
}

Outcome Session::Execute(const EventDestroyRequest& request, Span, ContextState& ctx, Event&) {
  ctx.events.Erase(request.event);
  return Code::kOk;
}

Outcome Session::Execute(const EventRecordRequest&, Span, ContextState& ctx, Event& event,
                         Stream*) {
  event.recorded = true;
  event.timestamp_ns = NowNs();
  event.completed_ns.reset();
  if (ctx.impl->asynchronous()) {
    // The event's time is when the work before it completed, as on a GPU.
    auto completed = std::make_shared<std::atomic<int64_t>>(0);
    event.completed_ns = completed;
    ctx.impl->NotifyWhenDone([completed] { completed->store(NowNs()); });
  }
  return Code::kOk;
}

Outcome Session::Execute(const EventElapsedTimeRequest&, Span, ContextState& ctx, Event& start,
                         Event& end) {
  if (!start.recorded || !end.recorded) return Code::kInvalidHandle;
  int64_t start_ns = start.timestamp_ns, end_ns = end.timestamp_ns;
  if (start.completed_ns && end.completed_ns) {
    SynchronizeAdapter(ctx);  // both events complete, their callbacks run
    start_ns = start.completed_ns->load();
    end_ns = end.completed_ns->load();
  }
  EventElapsedTimeReply reply;
  reply.result = 0;
  reply.milliseconds = static_cast<float>(end_ns - start_ns) / 1e6f;
  SendReply(reply);
  return Code::kOk;
}

}  // namespace pvgpu::host
