// One guest connection: its handle tables, its contexts on the adapters, and the loop that
// decodes, validates and executes its commands in order.
//
// Two tiers of errors (see STYLE.md): a message that breaks the protocol (bad size, unknown op,
// unknown or stale handle, a handle reused) ends the session with a logged reason; a CUDA-level
// failure (bad pointer value, out of memory, a kernel fault) is a result returned to the guest.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "adapters/adapter.h"
#include "common/function_ref.h"
#include "common/range_map.h"
#include "protocol/wire.h"
#include "transport/channel.h"

namespace pvgpu::host {

class Server;

// What a listener grants the sessions it accepts: which host adapters they see (in order) and
// how much device memory each session may hold across them (0: no quota beyond the adapters').
struct SessionPolicy {
  std::vector<adapters::Adapter*> adapters;
  uint64_t memory_quota = 0;
  std::string listener;  // for logs and smi
  Server* server = nullptr;
  // An admin session (the host's own tools) sees every session and listener; others see only
  // their own listener's sessions and adapters.
  bool admin = true;
};

// A point-in-time view for `pvgpu smi`.
struct SessionSnapshot {
  uint32_t id = 0;
  int guest_pid = -1;
  std::string guest_name;
  std::string channel;
  uint64_t used_bytes = 0;
  uint32_t contexts = 0;
  std::vector<uint32_t> devices;  // host adapter indices in use
};

class Session {
 public:
  Session(uint32_t id, std::unique_ptr<transport::Endpoint> endpoint, SessionPolicy policy);
  ~Session();

  // Serves the guest until it leaves, its channel breaks, it violates the protocol, or Stop().
  void Run();
  // Asks Run to return soon and stops running kernels (daemon shutdown).
  void Stop();
  bool finished() const { return finished_.load(); }
  SessionSnapshot Snapshot() const;
  uint32_t id() const { return id_; }
  const SessionPolicy& policy() const { return policy_; }

  // Called by protocol::Dispatch for each decoded request (and by RunInPlace, whose payload
  // is a transport::MessageView).
  template <typename Request, typename Payload>
  Code Handle(const Request& request, const Payload& payload);

 private:
  struct Allocation {
    bool module_owned;  // a module's global or a mapped host region: not freed by cuMemFree
  };
  // Pinned host memory: a guest memfd mapped into the daemon.
  struct Region {
    Region(uint8_t* data, uint64_t size) : data(data), size(size) {}
    ~Region();
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
    uint8_t* data;
    uint64_t size;
  };
  struct Event {
    bool recorded = false;
    int64_t timestamp_ns = 0;
    // Asynchronous adapters: set when the work before the record has completed (an adapter
    // thread writes it, hence shared and atomic); timestamp_ns is only the submission time.
    std::shared_ptr<std::atomic<int64_t>> completed_ns;
  };
  struct ContextState {
    uint32_t device = 0;  // index in policy_.adapters
    std::unique_ptr<adapters::Context> impl;
    Code sticky = Code::kOk;   // a fault poisons the context, as on hardware
    Code pending = Code::kOk;  // first asynchronous error not yet reported
    RangeMap<Allocation> allocations;
    std::unordered_map<uint64_t, std::unique_ptr<adapters::Module>> modules;
    std::unordered_map<uint64_t, uint32_t> streams;  // handle -> flags
    std::unordered_map<uint64_t, Event> events;
    std::unordered_map<uint64_t, uint64_t> mapped_regions;  // region handle -> dptr
  };

  // Executors, one per message; session_handlers_*.cc.
  Code Execute(const protocol::HelloRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::GoodbyeRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::HostStatusRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::DeviceGetInfoRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemGetInfoRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::CtxCreateRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::CtxDestroyRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::CtxSynchronizeRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::CtxSetLimitRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemAllocRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemFreeRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemcpyHtoDRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemcpyHtoDRequest&, const transport::MessageView&);
  Code Execute(const protocol::MemcpyDtoHRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemcpyDtoDRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemsetRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::HostRegionCreateRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::HostRegionDestroyRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::HostRegionMapRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemcpyHtoDRegionRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::MemcpyDtoHRegionRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::ModuleLoadRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::ModuleUnloadRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::LaunchKernelRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::StreamCreateRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::StreamDestroyRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::StreamSynchronizeRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::EventCreateRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::EventDestroyRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::EventRecordRequest&, std::span<const uint8_t>);
  Code Execute(const protocol::EventElapsedTimeRequest&, std::span<const uint8_t>);

  // Runs `launch` (a synchronous adapter's kernel, which may never end) while watching the
  // channel: once it has run for a while, a watcher thread reads the guest's next messages
  // ahead, and cancels the kernel when the guest hangs up, says Goodbye or destroys the
  // kernel's context. The session loop executes what was read ahead, in order, afterwards.
  //
  // `launch` is called before WatchedLaunch returns, so it is taken by reference: a
  // std::function would allocate for the launch's captures on every launch.
  Status WatchedLaunch(ContextState& ctx, uint64_t ctx_handle, FunctionRef<Status()> launch);
  void WatchLoop();
  // The session thread starts and ends launches without taking `mutex`: it and the watcher
  // publish their flags seq_cst and then read the other's (Dekker), so either the session
  // thread sees the watcher idle or busy and takes the lock to notify it, or the watcher sees
  // the launch's new state itself.
  struct Watch {
    std::mutex mutex;
    std::condition_variable changed;
    std::atomic<bool> active{false};               // a launch is running
    std::atomic<uint64_t> launches{0};             // launches started (session thread writes)
    std::atomic<adapters::Context*> ctx{nullptr};  // the running launch's context
    std::atomic<uint64_t> ctx_handle{0};
    std::atomic<bool> busy{false};  // the watcher is reading ahead
    std::atomic<bool> idle{false};  // the watcher sleeps until a launch starts
    // The watcher waits for the watched launch to end (set before busy is cleared).
    std::atomic<bool> awaiting_end{false};
    bool exit = false;  // guarded by mutex
    std::thread thread;
  };
  Watch watch_;
  // Filled by the watcher only while watch_.busy, drained by the session loop otherwise.
  std::deque<std::vector<uint8_t>> read_ahead_;
  Status read_ahead_end_;  // the channel's end seen while reading ahead (kOk: none)

  // Ends the session: the guest broke the protocol. Returns a code for convenience.
  Code Fatal(const std::string& reason);
  // Looks up a region and checks [offset, offset + size) lies inside it; violations are fatal.
  Region* FindRegion(uint64_t handle, uint64_t offset, uint64_t size);
  // Looks up a context handle; a handle the guest never created is fatal.
  ContextState* FindContext(uint64_t handle);
  // Validates that [address, address + size) lies inside one allocation of `ctx`.
  bool InAllocation(const ContextState& ctx, uint64_t address, uint64_t size) const;
  // Checks a stream handle (0 is the context's default stream); unknown ones are fatal.
  bool ValidStream(ContextState& ctx, uint64_t stream);
  // First error to report for work in `ctx`: the sticky fault, else kOk.
  static Code Sticky(const ContextState& ctx) { return ctx.sticky; }
  void RecordFault(ContextState& ctx, const Status& status, const char* what);
  // Publishes how many faults were recorded (transport::Endpoint::PublishErrorCount), or that
  // the count cannot be vouched for while an asynchronous adapter's context exists.
  void PublishErrorCount();
  uint64_t faults_recorded_ = 0;
  void DestroyContext(ContextState& ctx);
  uint64_t UsedBytes() const;

  // The start of each message in Run: its header in current_, checked (sequence, flags, Hello
  // first); false, with the session ended as a protocol violation, when it fails.
  bool BeginMessage(const protocol::MessageHeader& header, uint64_t* last_seq);
  // Runs a MemcpyHtoD message where it arrived (transport::Endpoint::ReceiveView): the bytes
  // go from the channel's ring straight to the device, without a copy into a message buffer.
  // Only its header and fixed part are copied and checked: the guest may still rewrite the
  // payload while it is copied, which changes only its own data; the adapter is done with the
  // payload when Write returns (adapters::Context::Write). False for any other message, which
  // the caller copies out and runs as usual.
  bool RunInPlace(const transport::MessageView& message, uint64_t* last_seq);

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
  void SendRaw(const protocol::MessageHeader& header, std::span<const uint8_t> fixed,
               std::span<const uint8_t> payload);
  // What a failed send means for the session: the guest gone (stop), or a corrupt ring (fatal).
  void HandleSendStatus(const Status& sent);

  // The deferred completion fence (asynchronous adapters). The shared fence means "every
  // message up to N is done". Work on an asynchronous context completes after its message was
  // executed, on an adapter thread, and contexts complete out of order; so the seqs still in
  // flight are kept, and the fence published is the highest seq below all of them (monotonic).
  //
  // Ends the current message: its seq is done now, or, when it named an asynchronous context,
  // once the work submitted so far on that context completes. Once per message (SendReply
  // calls it before replying, SendReplyFilled once the payload is written and before the
  // reply is visible, the loop after executing).
  void SettleCurrent();
  // A deferred seq's work is done (any thread).
  void CompleteSeq(uint64_t seq);
  void PublishFenceLocked();  // fence_mutex_ held
  // Waits for an asynchronous context's work; its faults become the context's errors.
  void SynchronizeAdapter(ContextState& ctx);
  uint64_t touched_ctx_ = 0;  // the context the current message named (set by FindContext)
  bool settled_ = false;
  std::mutex fence_mutex_;
  std::set<uint64_t> in_flight_;  // guarded by fence_mutex_, as are the two below
  uint64_t executed_ = 0;
  uint64_t published_ = 0;
  // Set (session thread, under fence_mutex_) when a seq is first deferred; until then only the
  // session thread touches the three above and SettleCurrent takes no lock.
  bool deferred_ever_ = false;

  const uint32_t id_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  const SessionPolicy policy_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  bool fatal_ = false;
  bool said_goodbye_ = false;
  bool hello_done_ = false;

  // The message being executed.
  protocol::MessageHeader current_{};
  bool replied_ = false;

  mutable std::mutex mutex_;  // guards the tables below against Snapshot/Stop
  int guest_pid_ = -1;
  std::string guest_name_;
  std::unordered_map<uint64_t, std::unique_ptr<ContextState>> contexts_;
  std::unordered_map<uint64_t, std::unique_ptr<Region>> regions_;
};

template <typename Request, typename Payload>
Code Session::Handle(const Request& request, const Payload& payload) {
  replied_ = false;
  const Code code = Execute(request, payload);
  if (fatal_) return code;
  const bool want_reply = !Request::kAsync || (current_.flags & protocol::kFlagWantReply) != 0;
  if (want_reply && !replied_) {
    typename Request::Reply reply;
    reply.result = static_cast<int32_t>(code);
    SendReply(reply);
  }
  return code;
}

template <typename Reply>
void Session::SendReply(const Reply& reply, std::span<const uint8_t> payload) {
  protocol::MessageHeader header;
  header.op = current_.op;
  header.flags = protocol::kFlagReply;
  header.seq = current_.seq;
  // The fence covers this message too, so the guest sees it done when the reply arrives
  // (deferred until its work completes when it ran on an asynchronous adapter).
  SettleCurrent();
  SendRaw(header, {reinterpret_cast<const uint8_t*>(&reply), sizeof(reply)}, payload);
  replied_ = true;
}

template <typename Reply>
Status Session::SendReplyFilled(const Reply& reply, size_t payload_bytes,
                                FunctionRef<Status(std::span<uint8_t>, size_t)> fill) {
  protocol::MessageHeader header;
  header.op = current_.op;
  header.flags = protocol::kFlagReply;
  header.seq = current_.seq;
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
  replied_ = true;
  return Status::Ok();
}

}  // namespace pvgpu::host
