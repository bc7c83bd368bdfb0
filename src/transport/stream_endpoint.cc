// The remote channel's Endpoint as callers see it (stream_endpoint.h explains the roles).
#include "transport/stream_endpoint.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

namespace pvgpu::transport::internal {
namespace {

// A message at least this large is written from the caller's buffers, never copied into the
// queue: the caller waits while the socket takes it, as it would wait for room in a ring.
constexpr size_t kBulkBytes = 64u << 10;
// A small Send this soon after the previous one is part of a burst (pipelined launches): it is
// queued for one large write instead of costing a write of its own.
constexpr auto kBurstGap = std::chrono::microseconds(50);
// Received messages whose vectors are kept for reuse (only large ones: see AllocateBody).
constexpr size_t kSpareMessages = 4;
constexpr size_t kSpareMinBytes = 64u << 10;
// A fence query reads the socket at most this often.
constexpr auto kQueryReadGap = std::chrono::microseconds(20);
// How long the host's reader waits, out of input, before it sends an unsent fence by itself.
constexpr auto kIdleFenceDelay = std::chrono::milliseconds(1);

void Drain(int eventfd) {
  uint64_t count;
  (void)!::read(eventfd, &count, sizeof(count));
}

}  // namespace

StreamEndpoint::StreamEndpoint(std::unique_ptr<ByteStream> stream,
                               const StreamEndpointOptions& options)
    : stream_(std::move(stream)),
      options_(options),
      io_wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      reader_wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      decoder_(options.max_message_size, [this](size_t size) { return AllocateBody(size); }) {
  Touch(last_rx_);
  Touch(last_tx_);
  read_buffer_.Resize(256u << 10);
  thread_ = std::thread([this] { Run(); });
}

StreamEndpoint::~StreamEndpoint() {
  Close();
  thread_.join();
}

Status StreamEndpoint::UsableLocked() const {
  if (closed_) return Error(Code::kDeviceUnavailable, "channel closed (" + Describe() + ")");
  if (broken_) return Error(broken_code_, broken_reason_);
  return Status::Ok();
}

Status StreamEndpoint::Send(Parts parts) {
  size_t total = 0;
  for (const auto& part : parts) total += part.size();
  if (total > options_.max_message_size) {
    return Error(Code::kInvalidValue, "message of " + std::to_string(total) +
                                          " bytes exceeds the channel maximum of " +
                                          std::to_string(options_.max_message_size));
  }
  Lock lock(mu_);
  if (total >= kBulkBytes) return SendDirect(lock, parts, 0, nullptr);
  cv_.wait(lock,
           [&] { return closed_ || broken_ || pending_.size() < options_.send_buffer_bytes; });
  PVGPU_TRY(UsableLocked());
  const Clock::time_point now = Clock::now();
  // The third Send in a row without a wait for an answer in between, soon after the one
  // before, is a burst (pipelined launches). Two may well be a launch and its synchronize.
  const bool burst = sends_since_wait_ >= 2 && now - last_send_ < kBurstGap;
  last_send_ = now;
  ++sends_since_wait_;
  if (burst || writer_ || !pending_.empty()) {
    pending_.AppendFrame(kMessage, parts);
    if (!writer_) HandWriteRoleToIoLocked();
    return Status::Ok();
  }
  // A lone message: out at once, from this thread; the I/O thread finishes it only if the
  // socket is full.
  writer_ = true;
  writer_is_io_ = false;
  out_.clear();
  out_done_ = 0;
  out_.AppendFrame(kMessage, parts);
  AppendFenceLocked(&out_);
  lock.unlock();
  const Io wrote = Flush(/*release=*/true);
  if (wrote == Io::kWantRead || wrote == Io::kWantWrite) {
    lock.lock();
    HandWriteRoleToIoLocked();
  }
  return Status::Ok();  // a failure shows in the next call, as for a queued message
}

Status StreamEndpoint::SendFilled(Parts parts, size_t fill_bytes, Fill fill) {
  size_t total = fill_bytes;
  for (const auto& part : parts) total += part.size();
  if (total > options_.max_message_size) {
    return Error(Code::kInvalidValue, "message of " + std::to_string(total) +
                                          " bytes exceeds the channel maximum " +
                                          std::to_string(options_.max_message_size));
  }
  Lock lock(mu_);
  return SendDirect(lock, parts, fill_bytes, &fill);
}

Status StreamEndpoint::SendDirect(Lock& lock, Parts parts, size_t fill_bytes, const Fill* fill) {
  cv_.wait(lock, [&] { return closed_ || broken_ || !writer_ || IoHandoffPendingLocked(); });
  PVGPU_TRY(UsableLocked());
  const bool had_role = writer_;  // taken over from the I/O thread before it began
  writer_ = true;
  writer_is_io_ = false;
  if (!had_role) {
    out_.clear();
    out_done_ = 0;
  }
  // What was queued before, and a fence not sent yet, go first, in the same writes as this
  // message (a fence frame written by itself would wake a guest waiting for this answer).
  if (!pending_.empty()) {
    if (out_.empty()) {
      out_.Swap(pending_);
    } else {
      out_.Append(pending_.data(), pending_.size());
    }
    pending_.clear();
    cv_.notify_all();  // Sends waiting for room
  }
  AppendFenceLocked(&out_);
  const size_t mark = out_.size();
  lock.unlock();
  // The frame: its header and small parts (or the filled bytes) in out_, large parts written
  // from where they are.
  size_t total = fill_bytes;
  for (const auto& part : parts) total += part.size();
  const FrameHeader header{static_cast<uint32_t>(total), kMessage};
  out_.Append(&header, sizeof(header));
  std::vector<std::span<const uint8_t>> rest;
  for (const auto& part : parts) {
    if (rest.empty() && (part.size() < kBulkBytes || fill != nullptr)) {
      out_.Append(part.data(), part.size());
    } else {
      rest.push_back(part);
    }
  }
  Status status = Status::Ok();
  if (fill != nullptr && fill_bytes != 0) {
    const size_t at = out_.size();
    out_.Resize(at + fill_bytes);
    status = (*fill)({out_.data() + at, fill_bytes}, 0);
  }
  if (!status.ok()) {
    // Nothing of this message goes out; what was before it does, and the stream stays whole.
    out_.Resize(mark);
    const Io wrote = Flush(/*release=*/true);
    lock.lock();
    if (wrote == Io::kWantRead || wrote == Io::kWantWrite) HandWriteRoleToIoLocked();
    return status;
  }
  status = WriteBlocking(rest);
  lock.lock();
  if (broken_) return UsableLocked();
  ReleaseWriteRoleLocked();
  last_send_ = Clock::now();
  ++sends_since_wait_;
  return status;
}

template <typename Ready>
Status StreamEndpoint::WaitFor(Lock& lock, const Deadline& deadline, Ready ready) {
  ++waiters_;
  // A caller that just sent waits for an answer that cannot be there yet: it sleeps in poll
  // at once rather than first read the socket only to hear "would block".
  bool poll_first = sends_since_wait_ > 0;
  sends_since_wait_ = 0;
  bool reading = false;            // this thread holds the read role
  bool writing = false;            // ... and the write role
  Clock::time_point idle_since{};  // when input last ran out (while reading)
  Status result = Status::Ok();
  for (;;) {
    if (ready()) break;
    if (closed_ || broken_) {
      result = UsableLocked();
      break;
    }
    if (deadline.expired()) {
      result = Error(Code::kNotReady, "timed out");
      break;
    }
    // What is queued goes out first (the answer waited for may depend on it), from here
    // rather than by waking the I/O thread, if it has not begun yet.
    if (!writing && (IoHandoffPendingLocked() || (!writer_ && OutputDueLocked()))) {
      writing = TakeWriteRoleLocked();
    }
    if (!reading && !reader_) {
      reader_ = true;
      reader_is_io_ = false;
      reading = true;
    }
    if (!reading) {
      if (writing) {
        lock.unlock();
        const Io wrote = Flush(/*release=*/true);
        lock.lock();
        if (wrote == Io::kWantRead || wrote == Io::kWantWrite) HandWriteRoleToIoLocked();
        writing = false;
        continue;
      }
      // Someone else reads and hands out what arrives.
      if (deadline.infinite()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, deadline.when());
      }
      continue;
    }
    lock.unlock();
    const Io wrote = writing ? Flush(/*release=*/true) : Io::kDone;
    bool read_bytes = false;
    if (poll_first) {
      std::lock_guard<std::mutex> io(read_mu_);
      poll_first = !stream_->HasBufferedInput();
    }
    const Io read = poll_first ? Io::kDone : ReadPass(&read_bytes);
    poll_first = false;
    lock.lock();
    if (wrote != Io::kWantRead && wrote != Io::kWantWrite) writing = false;
    if (read_bytes) idle_since = {};
    if (ready() || closed_ || broken_ || read == Io::kMore) continue;
    // Out of input for a while: a fence the guest has not seen goes now (it may be polling
    // with queries). Not at once: the next request usually comes first and carries it home
    // with its answer, without a frame (and a wake-up on the guest) of its own.
    int timeout_ms = deadline.PollTimeoutMs();
    if (read == Io::kDone && !writing && fence_published_ > fence_sent_) {
      const Clock::time_point now = Clock::now();
      if (idle_since == Clock::time_point{}) idle_since = now;
      if (now - idle_since >= kIdleFenceDelay) {
        if (TakeWriteRoleLocked()) {
          writing = true;
          continue;
        }
      } else {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              idle_since + kIdleFenceDelay - now)
                              .count() +
                          1;
        timeout_ms =
            timeout_ms < 0 ? static_cast<int>(left) : std::min(timeout_ms, static_cast<int>(left));
      }
    }
    if (deadline.expired()) continue;
    short events = 0;
    if (read == Io::kDone || read == Io::kWantRead) events |= POLLIN;
    if (read == Io::kWantWrite) events |= POLLOUT;
    if (writing) events |= wrote == Io::kWantRead ? POLLIN : POLLOUT;
    reader_asleep_ = true;
    lock.unlock();
    pollfd fds[2] = {{events ? stream_->fd() : -1, events, 0}, {reader_wake_.get(), POLLIN, 0}};
    const int ready_count = ::poll(fds, 2, timeout_ms);
    if (ready_count > 0 && (fds[1].revents & POLLIN)) Drain(reader_wake_.get());
    lock.lock();
    reader_asleep_ = false;
  }
  if (reading) ReleaseReadRoleLocked();
  if (writing) HandWriteRoleToIoLocked();
  EnsureWriterLocked();
  --waiters_;
  return result;
}

Status StreamEndpoint::Receive(std::vector<uint8_t>* message, int timeout_ms) {
  const Deadline deadline(timeout_ms);
  Lock lock(mu_);
  PVGPU_TRY(WaitFor(lock, deadline, [&] { return !incoming_.empty(); }));
  const bool was_full = incoming_bytes_ >= options_.receive_buffer_bytes;
  if (message->size() >= kSpareMinBytes && spare_.size() < kSpareMessages) {
    spare_.push_back(std::move(*message));
  }
  *message = std::move(incoming_.front());
  incoming_.pop_front();
  incoming_bytes_ -= message->size();
  // A reader that stopped because the queue was full may go on.
  if (was_full && incoming_bytes_ < options_.receive_buffer_bytes) WakeReaderLocked();
  return Status::Ok();
}

std::vector<uint8_t> StreamEndpoint::AllocateBody(size_t size) {
  if (size >= kSpareMinBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spare_.empty()) {
      std::vector<uint8_t> body = std::move(spare_.back());
      spare_.pop_back();
      body.resize(size);  // zeroes only what it grows by (same-sized chunks: nothing)
      return body;
    }
  }
  return std::vector<uint8_t>(size);
}

void StreamEndpoint::PublishFence(uint64_t value) {
  Lock lock(mu_);
  fence_published_ = std::max(fence_published_, value);
  if (!FenceUrgentLocked()) return;    // it travels with the next output
  if (!TakeWriteRoleLocked()) return;  // the writer sends it before it lets go
  if (out_done_ == out_.size()) {
    out_.clear();
    out_done_ = 0;
  }
  lock.unlock();
  const Io wrote = Flush(/*release=*/true);
  if (wrote == Io::kWantRead || wrote == Io::kWantWrite) {
    lock.lock();
    HandWriteRoleToIoLocked();
  }
}

uint64_t StreamEndpoint::ReadFence() const {
  // Queries read what has arrived (the object is never const: the interface's ReadFence is
  // const because shared-memory channels only look).
  const_cast<StreamEndpoint*>(this)->PollForQuery();
  return fence_.load(std::memory_order_acquire);
}

void StreamEndpoint::PollForQuery() {
  Lock lock(mu_);
  const Clock::time_point now = Clock::now();
  if (broken_ || closed_ || now - last_query_ < kQueryReadGap) return;
  last_query_ = now;
  // Ask for the host's next progress, unless already asked: a query loop then sees each step
  // about a round trip after the host made it, not when other output happens to carry it.
  const uint64_t fence = fence_.load(std::memory_order_acquire);
  if (want_sent_ <= fence) {
    pending_.AppendValueFrame(kFenceWanted, fence + 1);
    want_sent_ = fence + 1;
    if (TakeWriteRoleLocked()) {
      lock.unlock();
      const Io wrote = Flush(/*release=*/true);
      lock.lock();
      if (wrote == Io::kWantRead || wrote == Io::kWantWrite) HandWriteRoleToIoLocked();
    }
  }
  if (reader_) return;  // whoever reads hands the fence out
  reader_ = true;
  reader_is_io_ = false;
  lock.unlock();
  (void)ReadPass();
  lock.lock();
  ReleaseReadRoleLocked();
  EnsureWriterLocked();
}

Status StreamEndpoint::WaitFence(uint64_t value, int timeout_ms) {
  const Deadline deadline(timeout_ms);
  Lock lock(mu_);
  if (fence_.load(std::memory_order_acquire) >= value) return Status::Ok();
  if (!closed_ && !broken_) {
    // Ask the host to send the fence as soon as it gets there (WaitFor flushes this).
    pending_.AppendValueFrame(kFenceWanted, value);
    want_sent_ = std::max(want_sent_, value);
  }
  return WaitFor(lock, deadline, [&] { return fence_.load(std::memory_order_acquire) >= value; });
}

bool StreamEndpoint::SpinForFence(uint64_t value, std::chrono::microseconds) {
  return ReadFence() >= value;
}

Status StreamEndpoint::SendFd(int) {
  return Error(Code::kNotSupported, "file descriptors cannot cross a network channel");
}

StatusOr<int> StreamEndpoint::ReceiveFd(int) {
  return Error(Code::kNotSupported, "file descriptors cannot cross a network channel");
}

void StreamEndpoint::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  closed_ = true;
  cv_.notify_all();
  WakeIoLocked();
  WakeReaderLocked();
}

std::unique_ptr<Endpoint> MakeStreamEndpoint(std::unique_ptr<ByteStream> stream,
                                             const StreamEndpointOptions& options) {
  return std::make_unique<StreamEndpoint>(std::move(stream), options);
}

}  // namespace pvgpu::transport::internal
