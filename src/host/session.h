// One guest connection: its handle tables, its contexts on the adapters, and the loop that
// decodes, validates and executes its commands in order.
//
// Two tiers of errors (see STYLE.md): a message that breaks the protocol (bad size, unknown op,
// unknown or stale handle, a handle reused) ends the session with a logged reason; a CUDA-level
// failure (bad pointer value, out of memory, a kernel fault) is a result returned to the guest.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/adapter.h"
#include "common/function_ref.h"
#include "common/range_map.h"
#include "host/completion_fence.h"
#include "host/fault_accounting.h"
#include "host/kernel_watcher.h"
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
    ContextErrors errors;
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
  void RecordFault(ContextState& ctx, const Status& status, const char* what) {
    faults_.Record(ctx.errors, status, what);
  }
  // Tells the fault accounting how many asynchronous contexts there are (after one came or went).
  void CountAsynchronousContexts();
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

  // Ends the current message (the completion fence covers it): done now, or, when it named an
  // asynchronous context, once the work submitted so far on that context completes. Once per
  // message (SendReply calls it before replying, SendReplyFilled once the payload is written
  // and before the reply is visible, the loop after executing).
  void SettleCurrent();
  // Waits for an asynchronous context's work; its faults become the context's errors.
  void SynchronizeAdapter(ContextState& ctx);
  uint64_t touched_ctx_ = 0;  // the context the current message named (set by FindContext)
  bool settled_ = false;

  const uint32_t id_;
  std::unique_ptr<transport::Endpoint> endpoint_;
  const SessionPolicy policy_;
  // Declared after endpoint_, which they use, and before the tables, whose asynchronous
  // contexts call back into the fence until they are destroyed.
  FaultAccounting faults_;
  CompletionFence fence_;
  KernelWatcher watcher_;
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
