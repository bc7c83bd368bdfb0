#include "transport/tcp_endpoint.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/log.h"

namespace pvgpu::transport::internal {
namespace {

static_assert(std::endian::native == std::endian::little, "frames are little-endian");

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum FrameType : uint32_t { kMessage = 1, kFence = 2, kHeartbeat = 3, kGoodbye = 4 };
struct FrameHeader {
  uint32_t length;
  uint32_t type;
};
static_assert(sizeof(FrameHeader) == 8);

void AppendFrame(std::vector<uint8_t>* out, FrameType type,
                 std::span<const std::span<const uint8_t>> parts) {
  size_t total = 0;
  for (const auto& part : parts) total += part.size();
  const FrameHeader header{static_cast<uint32_t>(total), type};
  const auto* h = reinterpret_cast<const uint8_t*>(&header);
  out->insert(out->end(), h, h + sizeof(header));
  for (const auto& part : parts) out->insert(out->end(), part.begin(), part.end());
}

class StreamEndpoint final : public Endpoint {
 public:
  StreamEndpoint(std::unique_ptr<ByteStream> stream, const StreamEndpointOptions& options)
      : stream_(std::move(stream)),
        options_(options),
        wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~StreamEndpoint() override {
    Close();
    thread_.join();
  }

  size_t max_message_size() const override { return options_.max_message_size; }

  Status Send(std::span<const std::span<const uint8_t>> parts) override {
    size_t total = 0;
    for (const auto& part : parts) total += part.size();
    if (total > options_.max_message_size) {
      return Error(Code::kInvalidValue, "message of " + std::to_string(total) +
                                            " bytes exceeds the channel maximum of " +
                                            std::to_string(options_.max_message_size));
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock,
               [&] { return closed_ || broken_ || pending_.size() < options_.send_buffer_bytes; });
      PVGPU_TRY(UsableLocked());
      AppendFrame(&pending_, kMessage, parts);
    }
    Wake();
    return Status::Ok();
  }
  using Endpoint::Send;

  Status Receive(std::vector<uint8_t>* message, int timeout_ms) override {
    bool unblock_reader = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      PVGPU_TRY(WaitLocked(lock, timeout_ms, [&] { return !incoming_.empty(); }));
      unblock_reader = incoming_bytes_ >= options_.receive_buffer_bytes;
      *message = std::move(incoming_.front());
      incoming_.pop_front();
      incoming_bytes_ -= message->size();
    }
    if (unblock_reader) Wake();
    return Status::Ok();
  }

  void PublishFence(uint64_t value) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      fence_to_send_ = value;
      fence_dirty_ = true;
    }
    Wake();
  }
  uint64_t ReadFence() const override { return fence_.load(std::memory_order_acquire); }
  Status WaitFence(uint64_t value, int timeout_ms) override {
    std::unique_lock<std::mutex> lock(mu_);
    return WaitLocked(lock, timeout_ms, [&] { return ReadFence() >= value; });
  }

  Status SendFd(int) override {
    return Error(Code::kNotSupported, "file descriptors cannot cross a network channel");
  }
  StatusOr<int> ReceiveFd(int) override {
    return Error(Code::kNotSupported, "file descriptors cannot cross a network channel");
  }

  void Close() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;
      closed_ = true;
      cv_.notify_all();
    }
    Wake();
  }
  std::string Describe() const override { return options_.description; }

 private:
  Status UsableLocked() const {
    if (closed_) return Error(Code::kDeviceUnavailable, "channel closed (" + Describe() + ")");
    if (broken_) return Error(broken_code_, broken_reason_);
    return Status::Ok();
  }

  // Waits for `ready`, checked first so that what arrived before a break is still delivered.
  template <typename Ready>
  Status WaitLocked(std::unique_lock<std::mutex>& lock, int timeout_ms, Ready ready) {
    const Deadline deadline(timeout_ms);
    auto done = [&] { return ready() || closed_ || broken_; };
    if (deadline.infinite()) {
      cv_.wait(lock, done);
    } else {
      cv_.wait_until(lock, deadline.when(), done);
    }
    if (closed_) return UsableLocked();
    if (ready()) return Status::Ok();
    PVGPU_TRY(UsableLocked());
    return Error(Code::kNotReady, "timed out");
  }

  void Wake() {
    if (wake_pending_.exchange(true)) return;
    const uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof(one));
  }

  void Break(Code code, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return;
    broken_ = true;
    broken_code_ = code;
    broken_reason_ = reason + " (" + Describe() + ")";
    cv_.notify_all();
  }

  void Run();
  bool Parse(const uint8_t* data, size_t size);
  // Where the rest of a large message body can be read straight into (saving a copy of bulk
  // data), or empty.
  std::span<uint8_t> DirectTarget() {
    constexpr size_t kDirectReadMin = 64u << 10;
    if (header_have_ < sizeof(header_) || body_.size() - body_have_ < kDirectReadMin) return {};
    return {body_.data() + body_have_, body_.size() - body_have_};
  }

  std::unique_ptr<ByteStream> stream_;
  const StreamEndpointOptions options_;
  UniqueFd wake_fd_;
  std::atomic<bool> wake_pending_{false};
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // receivers, fence waiters and senders on a full buffer
  std::vector<uint8_t> pending_;
  bool fence_dirty_ = false;
  uint64_t fence_to_send_ = 0;
  std::deque<std::vector<uint8_t>> incoming_;
  size_t incoming_bytes_ = 0;
  bool closed_ = false;
  bool broken_ = false;
  Code broken_code_ = Code::kDeviceUnavailable;
  std::string broken_reason_;
  std::atomic<uint64_t> fence_{0};

  // Owned by the I/O thread.
  std::vector<uint8_t> writing_;
  size_t written_ = 0;
  FrameHeader header_{};
  size_t header_have_ = 0;
  std::vector<uint8_t> body_;
  size_t body_have_ = 0;
  bool peer_said_goodbye_ = false;
};

// Consumes bytes from the peer; false (after Break) when they break the framing rules.
bool StreamEndpoint::Parse(const uint8_t* data, size_t size) {
  std::vector<std::vector<uint8_t>> messages;
  uint64_t fence = 0;
  // Each round takes bytes or completes a frame; a frame whose body is already complete (empty
  // frames, direct reads) completes even when no new bytes came with this call.
  for (;;) {
    if (header_have_ < sizeof(header_)) {
      if (size == 0) break;
      const size_t take = std::min(size, sizeof(header_) - header_have_);
      std::memcpy(reinterpret_cast<uint8_t*>(&header_) + header_have_, data, take);
      header_have_ += take;
      data += take;
      size -= take;
      if (header_have_ < sizeof(header_)) break;
      const uint32_t length = header_.length;
      const bool valid = (header_.type == kMessage && length <= options_.max_message_size) ||
                         (header_.type == kFence && length == sizeof(uint64_t)) ||
                         ((header_.type == kHeartbeat || header_.type == kGoodbye) && length == 0);
      if (!valid) {
        Break(Code::kInvalidValue, "corrupt stream: frame type " + std::to_string(header_.type) +
                                       " of " + std::to_string(length) + " bytes");
        return false;
      }
      body_.resize(length);
      body_have_ = 0;
    }
    const size_t take = std::min(size, body_.size() - body_have_);
    if (take > 0) {
      std::memcpy(body_.data() + body_have_, data, take);
      body_have_ += take;
      data += take;
      size -= take;
    }
    if (body_have_ < body_.size()) break;
    header_have_ = 0;
    if (header_.type == kMessage) {
      messages.push_back(std::move(body_));
      body_ = {};
    } else if (header_.type == kFence) {
      uint64_t value;
      std::memcpy(&value, body_.data(), sizeof(value));
      fence = std::max(fence, value);
    } else if (header_.type == kGoodbye) {
      peer_said_goodbye_ = true;
    }
  }
  if (messages.empty() && fence == 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& message : messages) {
    incoming_bytes_ += message.size();
    incoming_.push_back(std::move(message));
  }
  if (fence > fence_.load(std::memory_order_relaxed)) {
    fence_.store(fence, std::memory_order_release);
  }
  cv_.notify_all();
  return true;
}

void StreamEndpoint::Run() {
  std::vector<uint8_t> buffer(256u << 10);
  auto last_rx = Clock::now();
  auto last_tx = last_rx;
  const auto heartbeat = milliseconds(options_.heartbeat_ms);
  const auto dead_after = milliseconds(options_.dead_after_ms);
  Clock::time_point close_deadline{};
  bool goodbye_queued = false;
  for (;;) {
    bool want_read;
    bool closing;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_) break;
      if (written_ == writing_.size()) {
        writing_.clear();
        written_ = 0;
        if (!pending_.empty()) {
          writing_.swap(pending_);
          cv_.notify_all();  // senders waiting for room
        }
        if (fence_dirty_) {
          const std::span<const uint8_t> value(reinterpret_cast<const uint8_t*>(&fence_to_send_),
                                               sizeof(fence_to_send_));
          AppendFrame(&writing_, kFence, {&value, 1});
          fence_dirty_ = false;
        }
      }
      want_read = incoming_bytes_ < options_.receive_buffer_bytes;
      closing = closed_;
    }
    auto now = Clock::now();
    // Silence while we hold back reading is our doing, not the peer's.
    if (!want_read) last_rx = now;
    if (closing) {
      if (close_deadline == Clock::time_point{}) {
        close_deadline = now + milliseconds(options_.close_flush_ms);
      }
      if (written_ == writing_.size()) {
        if (goodbye_queued) {
          stream_->ShutdownWrite();
          Break(Code::kDeviceUnavailable, "channel closed");
          break;
        }
        writing_.clear();
        written_ = 0;
        AppendFrame(&writing_, kGoodbye, {});
        goodbye_queued = true;
      }
      if (now >= close_deadline) {
        Break(Code::kDeviceUnavailable, "channel closed before the peer took all output");
        break;
      }
    } else if (written_ == writing_.size() && now - last_tx >= heartbeat) {
      writing_.clear();
      written_ = 0;
      AppendFrame(&writing_, kHeartbeat, {});
    }
    if (now - last_rx >= dead_after) {
      Break(Code::kDeviceUnavailable, "nothing heard from the peer for " +
                                          std::to_string(options_.dead_after_ms / 1000) +
                                          " s: it or the network is gone");
      break;
    }

    bool progress = false;
    bool failed = false;
    IoResult::Kind write_wait = IoResult::kDone;
    while (written_ < writing_.size()) {
      IoResult r = stream_->Write(writing_.data() + written_, writing_.size() - written_);
      if (r.kind == IoResult::kDone) {
        written_ += r.bytes;
        last_tx = Clock::now();
        progress = true;
      } else if (r.kind == IoResult::kWantRead || r.kind == IoResult::kWantWrite) {
        write_wait = r.kind;
        break;
      } else {
        Break(Code::kDeviceUnavailable,
              "connection lost while sending: " + (r.kind == IoResult::kEof ? "closed" : r.error));
        failed = true;
        break;
      }
    }
    IoResult::Kind read_wait = IoResult::kDone;
    // A bounded number of reads per round, so a fast sender cannot starve our writes.
    for (int round = 0; !failed && want_read && round < 16; ++round) {
      const std::span<uint8_t> direct = DirectTarget();
      IoResult r = direct.empty() ? stream_->Read(buffer.data(), buffer.size())
                                  : stream_->Read(direct.data(), direct.size());
      if (r.kind == IoResult::kDone) {
        last_rx = Clock::now();
        progress = true;
        if (!direct.empty()) body_have_ += r.bytes;
        if (!(direct.empty() ? Parse(buffer.data(), r.bytes) : Parse(nullptr, 0))) failed = true;
      } else if (r.kind == IoResult::kWantRead || r.kind == IoResult::kWantWrite) {
        read_wait = r.kind;
        break;
      } else if (r.kind == IoResult::kEof) {
        Break(Code::kDeviceUnavailable, peer_said_goodbye_
                                            ? "peer closed the channel"
                                            : "peer dropped the connection without a goodbye");
        failed = true;
      } else {
        Break(Code::kDeviceUnavailable, "connection lost: " + r.error);
        failed = true;
      }
    }
    if (failed) break;
    if (progress) continue;

    short events = 0;
    for (IoResult::Kind wait : {write_wait, read_wait}) {
      if (wait == IoResult::kWantRead) events |= POLLIN;
      if (wait == IoResult::kWantWrite) events |= POLLOUT;
    }
    now = Clock::now();
    auto wake_at = std::min(last_rx + dead_after, last_tx + heartbeat);
    if (closing) wake_at = std::min(wake_at, close_deadline);
    const auto wait = std::chrono::duration_cast<milliseconds>(wake_at - now).count() + 1;
    // fd -1 when we want nothing from the socket, or a hung-up socket would wake us at once.
    pollfd fds[2] = {{events ? stream_->fd() : -1, events, 0}, {wake_fd_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::clamp<int64_t>(wait, 0, 60000)));
    if (ready > 0 && (fds[1].revents & POLLIN)) {
      // Drain first, then re-arm: a Wake() landing between the two finds wake_pending_ still
      // set and skips its write, which is harmless, since the loop re-reads all state next.
      // The other order lost that Wake's write to this read and left wake_pending_ set with an
      // empty eventfd, so every later Wake() was skipped and queued output waited for the
      // next socket event or heartbeat.
      uint64_t count;
      (void)!::read(wake_fd_.get(), &count, sizeof(count));
      wake_pending_.store(false);
    }
  }
  // Whatever ended the loop, every waiter learns it now.
  Break(Code::kDeviceUnavailable, "channel closed");
}

}  // namespace

std::unique_ptr<Endpoint> MakeStreamEndpoint(std::unique_ptr<ByteStream> stream,
                                             const StreamEndpointOptions& options) {
  return std::make_unique<StreamEndpoint>(std::move(stream), options);
}

}  // namespace pvgpu::transport::internal
