// The guest's side of a session: one connection per process to the host named by PVGPU_HOST,
// request encoding, replies, and the completion fence. Used by libcuda.so.1 and
// libnvidia-ml.so.1.
//
// Asynchronous requests (kAsync in messages.json) are appended to the ring and return at once;
// their seq is the fence value that marks them done. PVGPU_PIPELINE=0 makes every request wait
// for the host's answer, reproducing the original GPU-PV's behaviour for comparison.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "protocol/wire.h"
#include "transport/channel.h"

namespace pvgpu::guest {

class Client {
 public:
  // The client for one host address ("unix:PATH"), created on first use and never destroyed
  // (so that calls from atexit handlers still work).
  static Client& ForAddress(const std::string& address);
  // The hosts named by PVGPU_HOST (a comma-separated list; default: the local default socket;
  // "dir:PATH" entries and containers' device sockets: see host_list.h), in order. Their
  // adapters become the guest's devices in that order.
  static std::vector<Client*> FromEnvironment();
  const std::string& address() const { return address_; }

  // Connects and says Hello, once. Later calls return the first outcome. kNoDevice when no
  // host answers (so CUDA programs see "no CUDA-capable device"), kDeviceUnavailable when the
  // channel broke later.
  Status Connect() EXCLUDES(mutex_);
  bool connected() const { return connected_.load(std::memory_order_acquire); }
  const protocol::HelloReply& hello() const { return hello_; }

  // Sends a request and waits for its reply. The reply's fixed part lands in *reply (which may
  // be null) and its payload in *payload. Returns the result code the host put in the reply.
  template <typename Request>
  Code Call(const Request& request, std::span<const uint8_t> request_payload = {},
            typename Request::Reply* reply = nullptr, std::vector<uint8_t>* payload = nullptr);

  // Appends an asynchronous request; *seq receives its fence value. Returns kOk, or the
  // host's result in unpipelined mode, or kDeviceUnavailable.
  template <typename Request>
  Code Post(const Request& request, std::span<const uint8_t> request_payload = {},
            uint64_t* seq = nullptr);

  // Sends `requests` back to back, then takes their replies in order, so that the host streams
  // the data of many chunks without a round trip each. `on_reply(index, payload)` sees each
  // successful reply's payload (a transport::MessageView: where it arrived, to be copied out,
  // valid during the call); the first failing result ends the call.
  template <typename Request, typename OnReply>
  Code CallPipelined(std::span<const Request> requests, OnReply&& on_reply);

  // Sends an asynchronous request but waits for its result (synchronous variants of
  // asynchronous calls, e.g. a copy into pinned memory that must be complete on return).
  template <typename Request>
  Code PostAndWait(const Request& request, std::span<const uint8_t> request_payload = {});

  // Passes a memfd and registers it as pinned region `handle`: fds and their HostRegionCreate
  // messages must reach the host in the same order, so both happen under one lock.
  // kNotSupported when the channel cannot pass descriptors (remote hosts).
  Code CreateRegion(int fd, uint64_t handle, uint64_t size, uint32_t flags)
      EXCLUDES(mutex_, fd_mutex_);
  // The same for any request that takes the memfd passed just before it (ManagedAlloc).
  template <typename Request>
  Code CallWithFd(int fd, const Request& request, typename Request::Reply* reply)
      EXCLUDES(mutex_, fd_mutex_);
  // A request whose success comes with a descriptor the host passed before its reply
  // (VmmExport): *fd is the caller's.
  template <typename Request>
  Code CallReceivingFd(const Request& request, typename Request::Reply* reply, int* fd)
      EXCLUDES(mutex_, fd_mutex_);

  // True once the host has finished every message up to `seq` (no message sent).
  bool Done(uint64_t seq) const;
  // Waits until Done(seq); kDeviceUnavailable if the host goes away meanwhile.
  Code WaitDone(uint64_t seq) EXCLUDES(mutex_);
  // Spins for up to `window` until Done(seq), never asleep on the doorbell
  // (transport::Endpoint::SpinForFence). For waits that are probably short.
  bool SpinUntilDone(uint64_t seq, std::chrono::microseconds window) const;
  // The host's count of recorded faults (transport::Endpoint::ReadErrorCount): nullopt where
  // the channel does not carry it, kErrorCountUnknown where the host cannot vouch for it.
  std::optional<uint64_t> FaultCount() const;
  // The seq of the last message sent.
  uint64_t last_seq() const { return last_seq_.load(std::memory_order_acquire); }

  // How long a descriptor the host passes before its reply may take to arrive.
  static constexpr int kFdTimeoutMs = 5000;

  // Guest-chosen handles: unique for the life of the process (and so per session).
  static uint64_t NewHandle();
  // Largest payload a single message may carry (callers chunk bulk data by it).
  size_t max_payload() const { return max_payload_; }
  bool pipelined() const { return pipelined_; }

 private:
  explicit Client(std::string address);
  // Where a reply goes, decoded straight from the receive buffer (no copy of the whole body
  // on the way): its fixed part into `fixed` (a reply shorter than `fixed_size` breaks the
  // channel), the rest into `*payload` when not null.
  struct ReplySink {
    void* fixed = nullptr;
    size_t fixed_size = 0;
    std::vector<uint8_t>* payload = nullptr;
  };
  // Sends `request` (asynchronous or not); when `wait`, waits for its reply, whose fixed part
  // lands in *reply (when given) and payload in *payload, and returns the host's result.
  template <typename Request>
  Code Send(const Request& request, std::span<const uint8_t> request_payload, bool async, bool wait,
            typename Request::Reply* reply, std::vector<uint8_t>* payload, uint64_t* seq);
  // Sends a request; waits for its reply when `reply` is not null.
  Code Exchange(uint32_t op, bool async, std::span<const uint8_t> fixed,
                std::span<const uint8_t> request_payload, const ReplySink* reply, uint64_t* seq)
      EXCLUDES(mutex_);
  Code SendLocked(uint32_t op, uint32_t flags, std::span<const uint8_t> fixed,
                  std::span<const uint8_t> payload, uint64_t* seq) REQUIRES(mutex_);
  Code AwaitReplyLocked(uint64_t seq, const ReplySink& reply) REQUIRES(mutex_);
  // Waits for the reply to `seq`, handling unsolicited messages on the way, and shows its body
  // (after the header) to `body` where it arrived (transport::Endpoint::ReceiveView). A reply to
  // another message breaks the channel.
  Code AwaitReplyViewLocked(uint64_t seq, FunctionRef<void(const transport::MessageView&)> body)
      REQUIRES(mutex_);
  // The batch behind CallPipelined: every request has the same op and fixed size.
  Code ExchangeBatch(uint32_t op, std::span<const uint8_t> requests, size_t request_size,
                     const std::function<Code(size_t, const transport::MessageView&)>& on_reply)
      EXCLUDES(mutex_);
  void HandleUnsolicited(const protocol::MessageHeader& header, std::span<const uint8_t> body);
  Code Broken(const Status& status);
  // Connects if needed and passes `fd` (SendFd); kNotSupported on channels without fd passing.
  Code PassFd(int fd) REQUIRES(fd_mutex_) EXCLUDES(mutex_);

  const std::string address_;
  // Held for a message's exchange with the host (and while connecting): one conversation on
  // the channel at a time.
  Mutex mutex_;
  // Set once under mutex_ before connected_; read without the lock after that (the fence and
  // fault count are the host's shared memory, read lock-free).
  std::unique_ptr<transport::Endpoint> endpoint_;
  std::atomic<bool> connected_{false};
  bool attempted_ GUARDED_BY(mutex_) = false;
  Status connect_status_ GUARDED_BY(mutex_);
  protocol::HelloReply hello_{};  // like endpoint_: written once before connected_
  std::atomic<uint64_t> last_seq_{0};
  std::atomic<bool> broken_{false};
  size_t max_payload_ = 0;
  bool pipelined_ = true;
  std::vector<uint8_t> scratch_ GUARDED_BY(mutex_);
  // Keeps a descriptor and its HostRegionCreate message together on the channel; taken before
  // mutex_.
  Mutex fd_mutex_ ACQUIRED_BEFORE(mutex_);
};

template <typename Request, typename OnReply>
Code Client::CallPipelined(std::span<const Request> requests, OnReply&& on_reply) {
  static_assert(!Request::kAsync);
  using Reply = typename Request::Reply;
  return ExchangeBatch(static_cast<uint32_t>(Request::kOp),
                       {reinterpret_cast<const uint8_t*>(requests.data()), requests.size_bytes()},
                       sizeof(Request),
                       [&on_reply](size_t index, const transport::MessageView& body) -> Code {
                         Reply fixed;
                         if (body.size() < sizeof(fixed)) return Code::kUnknown;
                         body.CopyPrefix(&fixed, sizeof(fixed));
                         if (fixed.result != 0) return static_cast<Code>(fixed.result);
                         return on_reply(index, body.Tail(sizeof(fixed)));
                       });
}

template <typename Request>
Code Client::Send(const Request& request, std::span<const uint8_t> request_payload, bool async,
                  bool wait, typename Request::Reply* reply, std::vector<uint8_t>* payload,
                  uint64_t* seq) {
  typename Request::Reply fixed;
  const ReplySink sink{&fixed, sizeof(fixed), payload};
  const Code sent = Exchange(static_cast<uint32_t>(Request::kOp), async,
                             {reinterpret_cast<const uint8_t*>(&request), sizeof(request)},
                             request_payload, wait ? &sink : nullptr, seq);
  if (sent != Code::kOk || !wait) return sent;
  if (reply != nullptr) *reply = fixed;
  return static_cast<Code>(fixed.result);
}

template <typename Request>
Code Client::CallWithFd(int fd, const Request& request, typename Request::Reply* reply) {
  MutexLock fd_lock(&fd_mutex_);
  if (Code code = PassFd(fd); code != Code::kOk) return code;
  return Call(request, {}, reply);
}

template <typename Request>
Code Client::CallReceivingFd(const Request& request, typename Request::Reply* reply, int* fd) {
  MutexLock fd_lock(&fd_mutex_);
  if (Code code = Call(request, {}, reply); code != Code::kOk) return code;
  auto received = endpoint_->ReceiveFd(kFdTimeoutMs);
  if (!received.ok()) return Broken(received.status());
  *fd = *received;
  return Code::kOk;
}

template <typename Request>
Code Client::PostAndWait(const Request& request, std::span<const uint8_t> request_payload) {
  static_assert(Request::kAsync);
  return Send(request, request_payload, true, true, nullptr, nullptr, nullptr);
}

template <typename Request>
Code Client::Call(const Request& request, std::span<const uint8_t> request_payload,
                  typename Request::Reply* reply, std::vector<uint8_t>* payload) {
  static_assert(!Request::kHostToGuest);
  return Send(request, request_payload, false, true, reply, payload, nullptr);
}

template <typename Request>
Code Client::Post(const Request& request, std::span<const uint8_t> request_payload, uint64_t* seq) {
  static_assert(Request::kAsync);
  // Pipelined, the request is only appended; otherwise it waits for the host's result.
  return Send(request, request_payload, true, !pipelined_, nullptr, nullptr, seq);
}

}  // namespace pvgpu::guest
