// Two endpoints joined in memory, for tests and as a baseline. Same observable semantics as the
// Unix channel: framed messages up to max_message_size, a fence the "host" end publishes, fds
// passed in order (dup()ed, so the sender keeps its own), and Close making the peer fail with
// kDeviceUnavailable once it has drained what was already sent. Unlike the shared rings the
// queues are unbounded, so Send never blocks.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "transport/channel.h"
#include "transport/fd_util.h"

namespace pvgpu::transport {
namespace {

using internal::Deadline;
using internal::UniqueFd;

struct Direction {
  std::deque<std::vector<uint8_t>> messages;
  std::deque<UniqueFd> fds;
};

struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  Direction to[2];  // to[i]: queued for end i
  bool closed[2] = {false, false};
  uint64_t fence = 0;
  size_t max_message;
};

class InProcessEndpoint final : public Endpoint {
 public:
  InProcessEndpoint(std::shared_ptr<Shared> shared, int me) : s_(std::move(shared)), me_(me) {}
  ~InProcessEndpoint() override { Close(); }

  size_t max_message_size() const override { return s_->max_message; }

  Status Send(std::span<const std::span<const uint8_t>> parts) override {
    size_t total = 0;
    for (const auto& part : parts) total += part.size();
    if (total > s_->max_message) {
      return Error(Code::kInvalidValue,
                   "message of " + std::to_string(total) + " bytes exceeds the channel maximum");
    }
    std::vector<uint8_t> message;
    message.reserve(total);
    for (const auto& part : parts) message.insert(message.end(), part.begin(), part.end());
    std::lock_guard<std::mutex> lock(s_->mu);
    PVGPU_TRY(Usable());
    s_->to[peer()].messages.push_back(std::move(message));
    s_->cv.notify_all();
    return Status::Ok();
  }
  using Endpoint::Send;

  Status Receive(std::vector<uint8_t>* message, int timeout_ms) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    auto& queue = s_->to[me_].messages;
    PVGPU_TRY(WaitLocked(lock, timeout_ms, [&] { return !queue.empty(); }));
    *message = std::move(queue.front());
    queue.pop_front();
    return Status::Ok();
  }

  void PublishFence(uint64_t value) override {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->fence = value;
    s_->cv.notify_all();
  }
  uint64_t ReadFence() const override {
    std::lock_guard<std::mutex> lock(s_->mu);
    return s_->fence;
  }
  Status WaitFence(uint64_t value, int timeout_ms) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    return WaitLocked(lock, timeout_ms, [&] { return s_->fence >= value; });
  }

  Status SendFd(int fd) override {
    UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy.valid()) return internal::ErrnoError(Code::kInvalidValue, "dup", errno);
    std::lock_guard<std::mutex> lock(s_->mu);
    PVGPU_TRY(Usable());
    s_->to[peer()].fds.push_back(std::move(copy));
    s_->cv.notify_all();
    return Status::Ok();
  }
  StatusOr<int> ReceiveFd(int timeout_ms) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    auto& queue = s_->to[me_].fds;
    PVGPU_TRY(WaitLocked(lock, timeout_ms, [&] { return !queue.empty(); }));
    int fd = queue.front().release();
    queue.pop_front();
    return fd;
  }

  void Close() override {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->closed[me_] = true;
    s_->cv.notify_all();
  }
  std::string Describe() const override { return "inprocess"; }

 private:
  int peer() const { return 1 - me_; }

  Status Usable() const {
    if (s_->closed[me_]) return Error(Code::kDeviceUnavailable, "channel closed (inprocess)");
    if (s_->closed[peer()]) return Error(Code::kDeviceUnavailable, "peer closed the channel");
    return Status::Ok();
  }

  // Waits for `ready` (checked first, so queued data drains after the peer closed).
  template <typename Ready>
  Status WaitLocked(std::unique_lock<std::mutex>& lock, int timeout_ms, Ready ready) {
    const Deadline deadline(timeout_ms);
    auto done = [&] { return ready() || !Usable().ok(); };
    if (deadline.infinite()) {
      s_->cv.wait(lock, done);
    } else {
      s_->cv.wait_until(lock, deadline.when(), done);
    }
    if (s_->closed[me_]) return Usable();
    if (ready()) return Status::Ok();
    PVGPU_TRY(Usable());
    return Error(Code::kNotReady, "timed out");
  }

  std::shared_ptr<Shared> s_;
  const int me_;
};

}  // namespace

std::pair<std::unique_ptr<Endpoint>, std::unique_ptr<Endpoint>> CreateInProcessPair(
    size_t max_message_size) {
  auto shared = std::make_shared<Shared>();
  shared->max_message = max_message_size;
  return {std::make_unique<InProcessEndpoint>(shared, 0),
          std::make_unique<InProcessEndpoint>(shared, 1)};
}

}  // namespace pvgpu::transport
