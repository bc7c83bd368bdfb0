// The Endpoint of the local channel, on either side, once set-up has produced its descriptors:
// the Unix socket (fd passing, hang-up), the memfd (rings and fence), and two eventfds.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "transport/channel.h"
#include "transport/doorbell.h"
#include "transport/fd_util.h"
#include "transport/ring.h"
#include "transport/shm_layout_unsafe.h"

namespace pvgpu::transport::internal {

enum class Side { kGuest, kHost };

struct ShmEndpointParts {
  Side side;
  UniqueFd socket;
  UniqueFd memfd;        // validated by the host before it gets here
  UniqueFd doorbell_in;  // ours: the peer rings it
  UniqueFd doorbell_out;
  size_t g2h_ring_bytes;
  size_t h2g_ring_bytes;
  std::string description;
  int peer_pid = -1;
  int peer_uid = -1;
};

class ShmEndpoint final : public Endpoint {
 public:
  // Maps the memfd (then closes it: the mapping keeps the memory).
  static StatusOr<std::unique_ptr<Endpoint>> Create(ShmEndpointParts parts);
  ~ShmEndpoint() override;

  size_t max_message_size() const override { return max_message_; }
  Status Send(std::span<const std::span<const uint8_t>> parts) override;
  using Endpoint::Send;
  Status SendFilled(std::span<const std::span<const uint8_t>> parts, size_t fill_bytes,
                    Fill fill) override;
  Status Receive(std::vector<uint8_t>* message, int timeout_ms) override;
  Status ReceiveView(std::vector<uint8_t>* scratch, Visit visit, int timeout_ms) override;
  void PublishFence(uint64_t value) override;
  uint64_t ReadFence() const override;
  Status WaitFence(uint64_t value, int timeout_ms) override;
  bool SpinForFence(uint64_t value, std::chrono::microseconds window) override;
  void PublishErrorCount(uint64_t count) override;
  std::optional<uint64_t> ReadErrorCount() const override;
  Status SendFd(int fd) override;
  StatusOr<int> ReceiveFd(int timeout_ms) override;
  void Close() override;
  std::string Describe() const override { return description_; }
  int peer_pid() const override { return peer_pid_; }
  int peer_uid() const override { return peer_uid_; }

 private:
  ShmEndpoint(ShmEndpointParts parts, void* map, size_t map_bytes);

  // Receive's loop around `take()` (a TryRead or TryVisit of the ring).
  template <typename Take>
  Status ReceiveWith(Take take, int timeout_ms);
  // Spins briefly, then sleeps on our doorbell with `flag` raised, until `ready()`.
  template <typename Ready>
  Status WaitUntil(Ready ready, uint32_t& flag, const Deadline& deadline);
  // WaitUntil's first phase: pauses, then yields, until ready(), the peer's close, or `end`.
  enum class SpinResult { kReady, kPeerGone, kTimedOut };
  template <typename Ready>
  SpinResult Spin(Ready ready, std::chrono::steady_clock::time_point end) const;
  // The error for calls on a closed, poisoned or orphaned endpoint; kOk when usable.
  Status Unusable() const;
  Status PeerGone() const;
  Status Poison(Status status);
  bool peer_closed() const;

  const Side side_;
  UniqueFd socket_;
  UniqueFd doorbell_in_;
  UniqueFd doorbell_out_;
  void* map_;
  size_t map_bytes_;
  ShmHeader* header_;
  WaiterFlags* mine_;
  WaiterFlags* peer_;
  size_t max_message_;
  RingWriter tx_;
  RingReader rx_;
  Doorbell doorbell_;
  const std::string description_;
  const int peer_pid_;
  const int peer_uid_;

  std::mutex send_mu_;
  std::mutex receive_mu_;
  std::mutex send_fd_mu_;
  std::mutex receive_fd_mu_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> poisoned_{false};
  std::atomic<bool> peer_gone_{false};  // a hang-up was seen: fail fast from now on
  mutable std::mutex poison_mu_;
  Status poison_;
};

}  // namespace pvgpu::transport::internal
