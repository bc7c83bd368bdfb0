// One guest connection: the loop that decodes, validates and executes its messages in order,
// and the objects it holds on the adapters.
//
// Two tiers of errors (STYLE.md): a message that breaks the protocol (bad size, unknown op,
// an unknown, stale, foreign or reused handle) is a violation (host/outcome.h) that ends the
// session with a logged reason; a CUDA-level failure (a bad pointer value, out of memory, a
// limit reached, a kernel fault) is a result returned to the guest.
//
// The parts the loop uses live in their own files: the kernel watcher (kernel_watcher.h), the
// completion fence (completion_fence.h), fault accounting (fault_accounting.h), the typed
// handle stores and limits (handle_store.h, session_objects.h, session_limits.h); the handlers
// are in session_*.cc by subject, the dispatch's interface in session_dispatch.cc.
//
// Implementors: a new message needs an entry in protocol/messages.json (its handles' kinds
// resolve there), an Execute overload here taking the request, its payload and the resolved
// objects, and its body in the session_*.cc of its subject.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "common/function_ref.h"
#include "host/completion_fence.h"
#include "host/fault_accounting.h"
#include "host/handle_store.h"
#include "host/kernel_watcher.h"
#include "host/outcome.h"
#include "host/session_limits.h"
#include "host/session_objects.h"
#include "protocol/wire.h"
#include "transport/channel.h"

namespace pvgpu::host {

class Server;
class ShareGate;

// What a listener grants the sessions it accepts: which host adapters they see (in order), how
// much device memory each session may hold across them (0: no quota beyond the adapters') and
// how many objects of each kind.
struct SessionPolicy {
  std::vector<adapters::Adapter*> adapters;
  uint64_t memory_quota = 0;
  SessionLimits limits;
  std::string listener;  // for logs and smi
  Server* server = nullptr;
  // An admin session (the host's own tools) sees every session and listener; others see only
  // their own listener's sessions and adapters.
  bool admin = true;
  // Compute sharing (docs/sharing.md): the session's weight on each adapter and its priority,
  // and the gates of asynchronous adapters, one per entry of `adapters` (empty: none).
  uint32_t compute_share = 1;
  bool high_priority = false;
  std::vector<ShareGate*> gates;
};

// What a session's work used on one adapter (its ShareFlow's counters).
struct FlowUsage {
  uint64_t kernels = 0;
  uint64_t busy_ns = 0;
  uint64_t queued_ns = 0;
  uint64_t worker_ns = 0;
  uint64_t bytes_htod = 0;
  uint64_t bytes_dtoh = 0;
  void Add(const FlowUsage& other);
  static FlowUsage Of(const ShareFlow& flow);
};

// A point-in-time view for `pvgpu smi`.
struct SessionSnapshot {
  uint32_t id = 0;
  int guest_pid = -1;
  std::string guest_name;
  std::string channel;
  uint64_t used_bytes = 0;
  uint32_t contexts = 0;
  uint64_t staged_bytes = 0;      // reserved by unfinished module uploads (host memory)
  std::vector<uint32_t> devices;  // host adapter indices in use
  // Accounting (docs/sharing.md): per entry of the session's policy adapters.
  std::vector<FlowUsage> usage;
  uint64_t faults = 0;   // failures recorded as context errors
  uint64_t replies = 0;  // messages answered: the channel round trips
  uint32_t compute_share = 1;
  bool high_priority = false;
  uint64_t started_us = 0;  // when the session began (microseconds since the epoch)
};

// Microseconds since the epoch (NVML's timestamps).
uint64_t NowMicros();

class Session {
 public:
  Session(uint32_t id, std::unique_ptr<transport::Endpoint> endpoint, SessionPolicy policy);
  ~Session();

  // Serves the guest until it leaves, its channel breaks, it violates the protocol, or Stop().
  void Run();
  // Asks Run to return soon and stops running kernels (daemon shutdown).
  void Stop();
  bool finished() const { return finished_.load(); }
  // Why the session ended when the guest broke the protocol; empty otherwise. Valid once
  // finished().
  const std::string& violation() const { return violation_; }
  SessionSnapshot Snapshot() const;
  uint32_t id() const { return id_; }
  const SessionPolicy& policy() const { return policy_; }

  // The interface protocol::Invoke (the generated dispatch) resolves handles through; see
  // protocol_autogen.h. session_dispatch.cc.
  using Result = Outcome;
  ContextState* Find(protocol::HandleTag<protocol::HandleKind::kContext>, uint64_t id);
  Region* Find(protocol::HandleTag<protocol::HandleKind::kRegion>, uint64_t id);
  Upload* Find(protocol::HandleTag<protocol::HandleKind::kUpload>, uint64_t id);
  bool Fresh(protocol::HandleTag<protocol::HandleKind::kContext>, uint64_t id) const;
  bool Fresh(protocol::HandleTag<protocol::HandleKind::kRegion>, uint64_t id) const;
  bool Fresh(protocol::HandleTag<protocol::HandleKind::kUpload>, uint64_t id) const;
  // Kinds scoped to a context: the object in that context's store of the kind
  // (ContextState::Store); handlers receive modules as the adapter's module itself.
  adapters::Module* Find(protocol::HandleTag<protocol::HandleKind::kModule>, uint64_t id,
                         ContextState& ctx);
  template <protocol::HandleKind K>
  auto* Find(protocol::HandleTag<K> kind, uint64_t id, ContextState& ctx) {
    return ctx.Store(kind).Find(id);
  }
  template <protocol::HandleKind K>
  bool Fresh(protocol::HandleTag<K> kind, uint64_t id, ContextState& ctx) {
    return ctx.Store(kind).Fresh(id);
  }
  template <typename Request>
  Outcome Unknown(const Request&, protocol::HandleKind kind, uint64_t id) {
    Begin<Request>();
    return Finish<Request>(UnknownHandle(Request::kOp, kind, id, nullptr));
  }
  template <typename Request>
  Outcome Unknown(const Request&, protocol::HandleKind kind, uint64_t id, ContextState& ctx) {
    Begin<Request>();
    return Finish<Request>(UnknownHandle(Request::kOp, kind, id, &ctx));
  }
  template <typename Request>
  Outcome Taken(const Request&, protocol::HandleKind kind, uint64_t id) {
    return TakenHandle(Request::kOp, kind, id);
  }
  Code Fault(const ContextState& ctx) const { return ctx.errors.sticky; }
  template <typename Request>
  Outcome Answer(const Request&, Code code) {
    Begin<Request>();
    return Finish<Request>(code);
  }
  // Executes a request whose handles resolved, then replies when the guest waits for one and
  // the handler did not. Also called by RunInPlace, whose payload is a transport::MessageView.
  template <typename Request, typename Payload, typename... Objects>
  Outcome Handle(const Request& request, const Payload& payload, Objects&&... objects) {
    Begin<Request>();
    return Finish<Request>(Execute(request, payload, std::forward<Objects>(objects)...));
  }

 private:
  using Span = std::span<const uint8_t>;

  // Executors, one per message, each given the request's resolved objects; session_*.cc.
  Outcome Execute(const protocol::HelloRequest&, Span);
  Outcome Execute(const protocol::GoodbyeRequest&, Span);
  Outcome Execute(const protocol::HostStatusRequest&, Span);
  Outcome Execute(const protocol::DeviceGetInfoRequest&, Span);
  Outcome Execute(const protocol::MemGetInfoRequest&, Span, ContextState&);
  Outcome Execute(const protocol::CtxCreateRequest&, Span);
  Outcome Execute(const protocol::CtxDestroyRequest&, Span, ContextState&);
  Outcome Execute(const protocol::CtxSynchronizeRequest&, Span, ContextState&);
  Outcome Execute(const protocol::CtxSetLimitRequest&, Span, ContextState&);
  Outcome Execute(const protocol::MemAllocRequest&, Span, ContextState&);
  Outcome Execute(const protocol::MemFreeRequest&, Span, ContextState&);
  Outcome Execute(const protocol::MemcpyHtoDRequest&, Span, ContextState&, Stream*);
  Outcome Execute(const protocol::MemcpyHtoDRequest&, const transport::MessageView&, ContextState&,
                  Stream*);
  Outcome Execute(const protocol::MemcpyDtoHRequest&, Span, ContextState&, Stream*);
  Outcome Execute(const protocol::MemcpyDtoDRequest&, Span, ContextState&, Stream*);
  Outcome Execute(const protocol::MemsetRequest&, Span, ContextState&, Stream*);
  Outcome Execute(const protocol::HostRegionCreateRequest&, Span);
  Outcome Execute(const protocol::HostRegionDestroyRequest&, Span, Region&);
  Outcome Execute(const protocol::HostRegionMapRequest&, Span, ContextState&, Region&);
  Outcome Execute(const protocol::MemcpyHtoDRegionRequest&, Span, ContextState&, Stream*, Region&);
  Outcome Execute(const protocol::MemcpyDtoHRegionRequest&, Span, ContextState&, Stream*, Region&);
  Outcome Execute(const protocol::ManagedAllocRequest&, Span, ContextState&);
  Outcome Execute(const protocol::ModuleLoadRequest&, Span, ContextState&);
  Outcome Execute(const protocol::ModuleUnloadRequest&, Span, ContextState&, adapters::Module&);
  Outcome Execute(const protocol::ModuleUploadBeginRequest&, Span);
  Outcome Execute(const protocol::ModuleUploadChunkRequest&, Span, Upload&);
  Outcome Execute(const protocol::ModuleLoadUploadedRequest&, Span, ContextState&, Upload&);
  Outcome Execute(const protocol::LaunchKernelRequest&, Span, ContextState&, Stream*,
                  adapters::Module&);
  Outcome Execute(const protocol::StreamCreateRequest&, Span, ContextState&);
  Outcome Execute(const protocol::StreamDestroyRequest&, Span, ContextState&, Stream&);
  Outcome Execute(const protocol::StreamSynchronizeRequest&, Span, ContextState&, Stream*);
  Outcome Execute(const protocol::EventCreateRequest&, Span, ContextState&);
  Outcome Execute(const protocol::EventDestroyRequest&, Span, ContextState&, Event&);
  Outcome Execute(const protocol::EventRecordRequest&, Span, ContextState&, Event&, Stream*);
  Outcome Execute(const protocol::EventElapsedTimeRequest&, Span, ContextState&, Event&, Event&);
  // Arrays, texture and surface objects (session_texture.cc).
  Outcome Execute(const protocol::ArrayCreateRequest&, Span, ContextState&);
  Outcome Execute(const protocol::ArrayDestroyRequest&, Span, ContextState&,
                  std::shared_ptr<ArrayState>&);
  Outcome Execute(const protocol::TexObjectCreateRequest&, Span, ContextState&,
                  std::shared_ptr<ArrayState>*);
  Outcome Execute(const protocol::TexObjectDestroyRequest&, Span, ContextState&, TextureObject&);
  // Virtual memory management (session_vmm.cc).
  Outcome Execute(const protocol::VmmReserveRequest&, Span, ContextState&);
  Outcome Execute(const protocol::VmmFreeRequest&, Span, ContextState&, Reservation&);
  Outcome Execute(const protocol::VmmCreateRequest&, Span, ContextState&);
  Outcome Execute(const protocol::VmmReleaseRequest&, Span, ContextState&,
                  std::shared_ptr<PhysicalState>&);
  Outcome Execute(const protocol::VmmMapRequest&, Span, ContextState&, Reservation&,
                  std::shared_ptr<PhysicalState>&);
  Outcome Execute(const protocol::VmmUnmapRequest&, Span, ContextState&, Reservation&);
  Outcome Execute(const protocol::VmmSetAccessRequest&, Span, ContextState&, Reservation&);
  Outcome Execute(const protocol::VmmExportRequest&, Span, ContextState&,
                  std::shared_ptr<PhysicalState>&);
  Outcome Execute(const protocol::VmmImportRequest&, Span, ContextState&);

  // Stream-ordered memory, virtual memory, stream memory operations (docs/memory.md);
  // session_memops.cc.
  Outcome Execute(const protocol::StreamWaitValueRequest&, Span, ContextState&, Stream*);

  // Graphs (session_graph.cc).
  Outcome Execute(const protocol::GraphExecCreateRequest&, Span, ContextState&);
  Outcome Execute(const protocol::GraphExecLaunchRequest&, Span, ContextState&, Stream*,
                  GraphExec&);
  Outcome Execute(const protocol::GraphExecDestroyRequest&, Span, ContextState&, GraphExec&);
  // Checks one entry of a GraphExecCreate payload as its own message would be checked when
  // the graph runs, now: a violation for what the protocol forbids.
  Outcome CheckGraphEntry(ContextState& ctx, uint32_t op, Span body);

  template <typename Request>
  void Begin() {
    replied_ = false;
    current_async_ = Request::kAsync;
  }
  // Replies with the outcome's code when the guest waits for a reply and none was sent.
  template <typename Request>
  Outcome Finish(Outcome outcome);
  // A handle that names no object: a violation, unless it is a creation the budget refused
  // (HandleStore::Refuse), whose error it then is. session_dispatch.cc.
  Outcome UnknownHandle(protocol::Op op, protocol::HandleKind kind, uint64_t id, ContextState* ctx);
  Outcome TakenHandle(protocol::Op op, protocol::HandleKind kind, uint64_t id);

  // One message that was copied out of the channel: header checks, then the dispatch.
  Outcome RunMessage(std::span<const uint8_t> message, uint64_t* last_seq);
  // The start of each message: its header in current_, checked (sequence, flags, Hello first).
  Outcome BeginMessage(const protocol::MessageHeader& header, uint64_t* last_seq);
  // Runs a MemcpyHtoD message where it arrived (transport::Endpoint::ReceiveView): the bytes
  // go from the channel's ring straight to the device, without a copy into a message buffer.
  // Only its header and fixed part are copied and checked: the guest may still rewrite the
  // payload while it is copied, which changes only its own data; the adapter is done with the
  // payload when Write returns (adapters::Context::Write). False for any other message, which
  // the caller copies out and runs as usual.
  bool RunInPlace(const transport::MessageView& message, uint64_t* last_seq,
                  std::optional<Outcome>* outcome);
  // ModuleLoad's work for an image whole in memory (a message's payload or a staged upload):
  // loads it as module `handle` of `ctx` and replies with its description. session_module.cc.
  Outcome LoadModule(ContextState& ctx, uint64_t handle, uint32_t image_kind, uint32_t log_limit,
                     Span image);
  // The error log of an image over the session's upload_bytes limit.
  std::string ImageTooLarge(uint64_t size) const;
  // Bytes the session's unfinished uploads have reserved.
  uint64_t StagedBytes() const;
  // Ends the session for a violation: logs the reason once.
  void EndWithViolation(const std::string& reason);

  // The work of a message failed after its message was answered or in a message the guest
  // does not wait for: the error becomes the context's, for its next synchronization.
  void RecordFault(ContextState& ctx, const Status& status, const char* what) {
    faults_.Record(ctx.errors, status, what);
    fault_count_.fetch_add(1, std::memory_order_relaxed);
  }
  // The share flow of the session on its adapter `device` (an index in policy_.adapters).
  ShareFlow& Flow(uint32_t device) { return *flows_[device]; }
  // Creation of a stream or event the budget refused: remembered (HandleStore::Refuse) so
  // that later uses of the handle get the error, not a violation.
  template <typename T>
  Outcome RefuseCreation(ContextState& ctx, HandleStore<T>& store, uint64_t id, const char* kind);
  // A copy between [offset, offset + size) of a pinned region and device memory at
  // `device_address`: both ranges checked (the region's a violation, the device's an error
  // recorded in `ctx`), then `copy` given the region's bytes.
  Outcome CopyWithRegion(ContextState& ctx, const Region& region, uint64_t offset, uint64_t size,
                         uint64_t device_address, FunctionRef<Status(std::span<uint8_t>)> copy);
  // Whether `size` more bytes fit in the session's memory quota (true without one).
  bool WithinQuota(uint64_t size) const;
  // Tells the fault accounting how many asynchronous contexts there are (after one came or
  // went).
  void CountAsynchronousContexts();
  // Waits for an asynchronous context's work; its faults become the context's errors.
  void SynchronizeAdapter(ContextState& ctx);
  // What the guest's synchronizing call in `ctx` returns (CtxSynchronize, StreamSynchronize).
  Code SynchronizeContext(ContextState& ctx);
  uint64_t UsedBytes() const;  // mutex_ held
  bool ReplyWanted() const {
    if (replaying_) return false;  // a graph's entries: GraphExecLaunch answers for them
    return (current_.flags & protocol::kFlagWantReply) != 0 || !current_async_;
  }

  // Ends the current message (the completion fence covers it): done now, or, when it named an
  // asynchronous context, once the work submitted so far on that context completes. Once per
  // message (SendReply calls it before replying, SendReplyFilled once the payload is written
  // and before the reply is visible, the loop after executing).
  void SettleCurrent();

  template <typename Reply>
  void SendReply(const Reply& reply, std::span<const uint8_t> payload = {});
  // SendReply for a reply whose `payload_bytes` of payload `fill` writes straight into the
  // channel (transport::Endpoint::SendFilled), for bulk data. Returns `fill`'s error, with
  // nothing sent and the message not yet settled, when it failed; kOk otherwise (a channel
  // failure is handled as SendRaw handles it).
  template <typename Reply>
  Status SendReplyFilled(const Reply& reply, size_t payload_bytes,
                         FunctionRef<Status(std::span<uint8_t>, size_t)> fill);
  void SendPrint(uint64_t ctx, std::string_view text);
  // The descriptor the guest passed just before the request being handled (HostRegionCreate,
  // ManagedAlloc, VmmImport take one), within a few seconds, for the caller to close; an error
  // when none came, which is the caller's protocol violation.
  StatusOr<int> TakeGuestDescriptor();
  void SendRaw(const protocol::MessageHeader& header, std::span<const uint8_t> fixed,
               std::span<const uint8_t> payload);
  // What a failed send means for the session: the guest gone (stop), or a corrupt ring, which
  // the message's outcome turns into a violation (Handle).
  void HandleSendStatus(const Status& sent);
  protocol::MessageHeader ReplyHeader() const;

  const uint32_t id_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  const SessionPolicy policy_;
  // Declared after endpoint_, which they use, and before the stores, whose asynchronous
  // contexts call back into the fence until they are destroyed.
  FaultAccounting faults_;
  CompletionFence fence_;
  KernelWatcher watcher_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::string violation_;
  bool said_goodbye_ = false;
  bool hello_done_ = false;

  // The message being executed.
  protocol::MessageHeader current_{};
  bool current_async_ = false;  // its op is asynchronous (its result is not awaited)
  bool replied_ = false;
  bool settled_ = false;
  uint64_t touched_ctx_ = 0;  // the context the message named (set by Find), for the fence
  bool replaying_ = false;    // running a graph's entries (session_graph.cc)
  Status send_failure_;       // a corrupt reply ring met while replying to it

  // One per policy adapter: the session's compute share there and what it used (read by
  // Snapshot at any time). Before the stores, whose contexts draw on them until destroyed.
  std::vector<std::unique_ptr<ShareFlow>> flows_;
  std::atomic<uint64_t> fault_count_{0};
  const uint64_t started_us_ = NowMicros();
  std::atomic<uint64_t> replies_{0};

  mutable std::mutex mutex_;  // guards what Snapshot and Stop read: the stores' membership
  int guest_pid_ = -1;
  std::string guest_name_;
  SessionBudgets budgets_;  // before the stores, which give back to them when destroyed
  HandleStore<ContextState> contexts_;
  HandleStore<Region> regions_;
  HandleStore<Upload> uploads_;
};

template <typename Request>
Outcome Session::Finish(Outcome outcome) {
  if (outcome.violation()) return outcome;
  if (ReplyWanted() && !replied_) {
    typename Request::Reply reply;
    reply.result = static_cast<int32_t>(outcome.code());
    SendReply(reply);
  }
  if (!send_failure_.ok()) return Violation("channel error: " + send_failure_.message());
  return outcome;
}

template <typename Reply>
void Session::SendReply(const Reply& reply, std::span<const uint8_t> payload) {
  // The fence covers this message too, so the guest sees it done when the reply arrives
  // (deferred until its work completes when it ran on an asynchronous adapter).
  SettleCurrent();
  const protocol::MessageHeader header = ReplyHeader();
  SendRaw(header, {reinterpret_cast<const uint8_t*>(&reply), sizeof(reply)}, payload);
  replied_ = true;
}

template <typename Reply>
Status Session::SendReplyFilled(const Reply& reply, size_t payload_bytes,
                                FunctionRef<Status(std::span<uint8_t>, size_t)> fill) {
  const protocol::MessageHeader header = ReplyHeader();
  std::span<const uint8_t> parts[] = {{reinterpret_cast<const uint8_t*>(&header), sizeof(header)},
                                      {reinterpret_cast<const uint8_t*>(&reply), sizeof(reply)}};
  // The message is settled (its fence published) only once the payload is all there, and
  // still before the reply is visible: a fault the fill reports must be recorded first.
  if (payload_bytes == 0) SettleCurrent();
  Status filled = Status::Ok();
  Status sent = endpoint_->SendFilled(parts, payload_bytes,
                                      [&](std::span<uint8_t> piece, size_t offset) -> Status {
                                        filled = fill(piece, offset);
                                        if (!filled.ok()) return filled;
                                        if (offset + piece.size() == payload_bytes) {
                                          SettleCurrent();
                                        }
                                        return Status::Ok();
                                      });
  if (!filled.ok()) return filled;
  HandleSendStatus(sent);
  replies_.fetch_add(1, std::memory_order_relaxed);
  replied_ = true;
  return Status::Ok();
}

}  // namespace pvgpu::host
