#include "transport/shm_endpoint.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/log.h"

namespace pvgpu::transport::internal {
namespace {

// Long enough to catch a reply that is already being computed, short enough that an idle
// waiter costs nothing measurable before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(30);

// The first spins only pause: a reply already being written lands within a few microseconds.
// After that we yield instead, because on an oversubscribed machine (or a container with a CPU
// quota) the peer we wait for may need the very core we are spinning on; measured on a loaded
// 2-core machine this cut the Unix ping-pong from ~95 us to ~20 us. The pause phase is short
// (16 pauses, well under a microsecond): on that machine the scheduler usually puts guest and
// host on one core, where every pause only delays the peer; 256 pauses (3 to 7 us there) made
// a launch + synchronize round trip 14 to 22 us, 16 pauses 5 to 7 us (sched_yield with no
// other runnable task returns in about 0.4 us, so a waiter on its own core loses little).
constexpr unsigned kPauseSpins = 16;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

ShmHeader* HeaderOf(void* map) { return static_cast<ShmHeader*>(map); }
uint8_t* G2hData(void* map) { return static_cast<uint8_t*>(map) + kHeaderBytes; }
uint8_t* H2gData(void* map, size_t g2h) { return G2hData(map) + g2h; }

}  // namespace

StatusOr<std::unique_ptr<Endpoint>> ShmEndpoint::Create(ShmEndpointParts parts) {
  const size_t bytes = kHeaderBytes + parts.g2h_ring_bytes + parts.h2g_ring_bytes;
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, parts.memfd.get(), 0);
  if (map == MAP_FAILED) return ErrnoError(Code::kMapFailed, "mmap of the channel memfd", errno);
  parts.memfd.reset();
  return std::unique_ptr<Endpoint>(new ShmEndpoint(std::move(parts), map, bytes));
}

ShmEndpoint::ShmEndpoint(ShmEndpointParts parts, void* map, size_t map_bytes)
    : side_(parts.side),
      socket_(std::move(parts.socket)),
      doorbell_in_(std::move(parts.doorbell_in)),
      doorbell_out_(std::move(parts.doorbell_out)),
      map_(map),
      map_bytes_(map_bytes),
      header_(HeaderOf(map)),
      mine_(side_ == Side::kGuest ? &header_->guest : &header_->host),
      peer_(side_ == Side::kGuest ? &header_->host : &header_->guest),
      // Each side may receive up to half its incoming ring, and must not send more than half
      // the peer's; with equal rings (the normal case) both are the same number.
      max_message_(std::min(parts.g2h_ring_bytes, parts.h2g_ring_bytes) / 2),
      tx_(side_ == Side::kGuest
              ? RingWriter(&header_->g2h_tail, &header_->g2h_head, G2hData(map),
                           parts.g2h_ring_bytes)
              : RingWriter(&header_->h2g_tail, &header_->h2g_head,
                           H2gData(map, parts.g2h_ring_bytes), parts.h2g_ring_bytes)),
      rx_(side_ == Side::kGuest
              ? RingReader(&header_->h2g_tail, &header_->h2g_head,
                           H2gData(map, parts.g2h_ring_bytes), parts.h2g_ring_bytes, max_message_)
              : RingReader(&header_->g2h_tail, &header_->g2h_head, G2hData(map),
                           parts.g2h_ring_bytes, max_message_)),
      doorbell_(doorbell_in_.get(), socket_.get()),
      description_(std::move(parts.description)),
      peer_pid_(parts.peer_pid),
      peer_uid_(parts.peer_uid) {}

ShmEndpoint::~ShmEndpoint() {
  Close();
  ::munmap(map_, map_bytes_);
}

bool ShmEndpoint::peer_closed() const {
  return peer_gone_.load(std::memory_order_relaxed) ||
         Flag(peer_->closed).load(std::memory_order_acquire) != 0;
}

Status ShmEndpoint::PeerGone() const {
  return Error(Code::kDeviceUnavailable, side_ == Side::kGuest
                                             ? "host closed the channel (" + description_ + ")"
                                             : "guest disconnected (" + description_ + ")");
}

Status ShmEndpoint::Unusable() const {
  if (poisoned_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(poison_mu_);
    return poison_;
  }
  if (closed_.load(std::memory_order_acquire)) {
    return Error(Code::kDeviceUnavailable, "channel closed (" + description_ + ")");
  }
  return Status::Ok();
}

Status ShmEndpoint::Poison(Status status) {
  {
    std::lock_guard<std::mutex> lock(poison_mu_);
    if (!poisoned_.load()) {
      poison_ = status.WithContext(description_);
      PVGPU_ERROR("transport: " << poison_.message());
      poisoned_.store(true, std::memory_order_release);
    }
  }
  Close();  // the peer is broken or hostile: make it fail too, and wake our own waiters
  return Unusable();
}

template <typename Ready>
ShmEndpoint::SpinResult ShmEndpoint::Spin(Ready ready,
                                          std::chrono::steady_clock::time_point end) const {
  for (unsigned i = 0;; ++i) {
    if (ready()) return SpinResult::kReady;
    if (peer_closed()) return SpinResult::kPeerGone;
    // Once yielding, the clock is read every time: a yield can hand the core to another
    // process for a whole tick, and 64 of them could keep us off the doorbell for 256 ms.
    if ((i >= kPauseSpins || (i & 63) == 63) && std::chrono::steady_clock::now() >= end) {
      return SpinResult::kTimedOut;
    }
    if (i < kPauseSpins) {
      CpuRelax();
    } else {
      sched_yield();
    }
  }
}

template <typename Ready>
Status ShmEndpoint::WaitUntil(Ready ready, uint32_t& flag, const Deadline& deadline) {
  auto spin_end = std::chrono::steady_clock::now() + kSpin;
  if (!deadline.infinite()) spin_end = std::min(spin_end, deadline.when());
  switch (Spin(ready, spin_end)) {
    case SpinResult::kReady:
      return Status::Ok();
    case SpinResult::kPeerGone:
      return PeerGone();
    case SpinResult::kTimedOut:
      break;
  }
  for (;;) {
    // Raise our flag, then re-check (Dekker with the peer's seq_cst publish-then-check; the
    // loads inside ready() are seq_cst too): either the peer sees the flag and rings, or we
    // see its update here.
    Flag(flag).fetch_add(1, std::memory_order_seq_cst);
    const uint64_t generation = doorbell_.generation();
    Status slept = Status::Ok();
    const bool is_ready = ready();
    if (!is_ready) {
      if (Status unusable = Unusable(); !unusable.ok()) {
        slept = unusable;
      } else if (peer_closed()) {
        slept = PeerGone();
      } else {
        slept = doorbell_.Sleep(generation, deadline);
        if (slept.code() == Code::kDeviceUnavailable) {
          if (Unusable().ok()) peer_gone_.store(true);
          slept = Unusable().ok() ? PeerGone() : Unusable();
        }
      }
    }
    Flag(flag).fetch_sub(1, std::memory_order_seq_cst);
    if (is_ready) return Status::Ok();
    if (!slept.ok()) return ready() ? Status::Ok() : slept;
  }
}

Status ShmEndpoint::Send(std::span<const std::span<const uint8_t>> parts) {
  return SendFilled(parts, 0, [](std::span<uint8_t>, size_t) { return Status::Ok(); });
}

Status ShmEndpoint::SendFilled(std::span<const std::span<const uint8_t>> parts, size_t fill_bytes,
                               Fill fill) {
  size_t parts_total = 0;
  for (const auto& part : parts) parts_total += part.size();
  // Checked apart first, so that the sum cannot overflow.
  for (size_t total : {fill_bytes, parts_total + fill_bytes}) {
    if (total > max_message_) {
      return Error(Code::kInvalidValue, "message of " + std::to_string(total) +
                                            " bytes exceeds the channel maximum " +
                                            std::to_string(max_message_));
    }
  }
  PVGPU_TRY(Unusable());
  std::lock_guard<std::mutex> lock(send_mu_);
  const size_t frame = FrameBytes(parts_total + fill_bytes);
  for (;;) {
    if (peer_closed()) return PeerGone();
    if (tx_.KnownFreeBytes() >= frame) break;
    StatusOr<size_t> free = tx_.FreeBytes();
    if (!free.ok()) return Poison(free.status());
    if (*free >= frame) break;
    auto has_space = [&] {
      StatusOr<size_t> now = tx_.FreeBytes();
      return !now.ok() || *now >= frame;
    };
    PVGPU_TRY(WaitUntil(has_space, mine_->space, Deadline(-1)));
  }
  PVGPU_TRY(tx_.WriteFilled(parts, parts_total, fill_bytes, fill));
  if (Flag(peer_->data).load(std::memory_order_seq_cst) != 0) RingDoorbell(doorbell_out_.get());
  return Status::Ok();
}

template <typename Take>
Status ShmEndpoint::ReceiveWith(Take take, int timeout_ms) {
  PVGPU_TRY(Unusable());
  std::lock_guard<std::mutex> lock(receive_mu_);
  const Deadline deadline(timeout_ms);
  for (;;) {
    StatusOr<bool> got = take();
    if (!got.ok()) return Poison(got.status());
    if (*got) {
      if (Flag(peer_->space).load(std::memory_order_seq_cst) != 0) {
        RingDoorbell(doorbell_out_.get());
      }
      return Status::Ok();
    }
    if (peer_closed()) return PeerGone();
    if (timeout_ms == 0) return Error(Code::kNotReady, "no message");
    PVGPU_TRY(WaitUntil([&] { return rx_.HasData(); }, mine_->data, deadline));
  }
}

Status ShmEndpoint::Receive(std::vector<uint8_t>* message, int timeout_ms) {
  return ReceiveWith([&] { return rx_.TryRead(message); }, timeout_ms);
}

Status ShmEndpoint::ReceiveView(std::vector<uint8_t>* /*scratch*/, Visit visit, int timeout_ms) {
  return ReceiveWith(
      [&] {
        return rx_.TryVisit([&](std::span<const uint8_t> first, std::span<const uint8_t> second) {
          visit(MessageView{first, second});
        });
      },
      timeout_ms);
}

void ShmEndpoint::PublishFence(uint64_t value) {
  if (side_ != Side::kHost) {
    PVGPU_WARN("transport: PublishFence on the guest side is ignored");
    return;
  }
  if (!Unusable().ok()) return;
  Word(header_->fence).store(value, std::memory_order_seq_cst);
  if (Flag(peer_->fence).load(std::memory_order_seq_cst) != 0) RingDoorbell(doorbell_out_.get());
}

uint64_t ShmEndpoint::ReadFence() const {
  return Word(header_->fence).load(std::memory_order_seq_cst);  // see WaitUntil
}

void ShmEndpoint::PublishErrorCount(uint64_t count) {
  if (side_ != Side::kHost || !Unusable().ok()) return;
  // Stored before the fence that covers the work which recorded the errors (seq_cst, as the
  // fence is), so a guest that sees the fence sees the count too.
  Word(header_->errors).store(count, std::memory_order_seq_cst);
}

std::optional<uint64_t> ShmEndpoint::ReadErrorCount() const {
  return Word(header_->errors).load(std::memory_order_seq_cst);
}

bool ShmEndpoint::SpinForFence(uint64_t value, std::chrono::microseconds window) {
  if (side_ != Side::kGuest || !Unusable().ok()) return false;
  return Spin([&] { return ReadFence() >= value; }, std::chrono::steady_clock::now() + window) ==
         SpinResult::kReady;
}

Status ShmEndpoint::WaitFence(uint64_t value, int timeout_ms) {
  if (side_ != Side::kGuest) return Error(Code::kNotSupported, "WaitFence on the host side");
  PVGPU_TRY(Unusable());
  if (ReadFence() >= value) return Status::Ok();
  if (timeout_ms == 0) return Error(Code::kNotReady, "fence not reached");
  return WaitUntil([&] { return ReadFence() >= value; }, mine_->fence, Deadline(timeout_ms));
}

Status ShmEndpoint::SendFd(int fd) {
  PVGPU_TRY(Unusable());
  std::lock_guard<std::mutex> lock(send_fd_mu_);
  const uint8_t tag = kFdTag;
  int fds[1] = {fd};
  Status sent = SendRecord(socket_.get(), {&tag, 1}, fds);
  if (sent.code() == Code::kDeviceUnavailable && sent.message().rfind("peer closed", 0) == 0) {
    return PeerGone();
  }
  return sent.WithContext(description_);
}

StatusOr<int> ShmEndpoint::ReceiveFd(int timeout_ms) {
  PVGPU_TRY(Unusable());
  std::lock_guard<std::mutex> lock(receive_fd_mu_);
  uint8_t tag = 0;
  std::vector<UniqueFd> fds;
  StatusOr<size_t> got = ReceiveRecord(socket_.get(), &tag, 1, 1, &fds, Deadline(timeout_ms));
  if (!got.ok()) {
    if (got.status().code() == Code::kDeviceUnavailable) {
      if (Unusable().ok()) peer_gone_.store(true);
      return Unusable().ok() ? PeerGone() : Unusable();
    }
    if (got.status().code() == Code::kNotReady) return got.status();
    return Poison(got.status().WithContext("bad descriptor record"));
  }
  if (*got != 1 || tag != kFdTag || fds.size() != 1) {
    return Poison(Error(Code::kInvalidValue, "bad descriptor record"));
  }
  return fds[0].release();
}

void ShmEndpoint::Close() {
  if (closed_.exchange(true)) return;
  Flag(mine_->closed).store(1, std::memory_order_seq_cst);
  // Both our own sleepers and the peer's see the hang-up on their poll of the socket.
  ::shutdown(socket_.get(), SHUT_RDWR);
}

}  // namespace pvgpu::transport::internal
