#include "transport/doorbell.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace pvgpu::transport::internal {
namespace {

Status HungUp() { return Error(Code::kDeviceUnavailable, "peer hung up"); }

}  // namespace

uint64_t Doorbell::generation() {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

Status Doorbell::Sleep(uint64_t seen_generation, const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (hung_up_) return HungUp();
  if (generation_ != seen_generation) return Status::Ok();
  if (leader_) {
    auto woken = [&] { return generation_ != seen_generation || hung_up_; };
    if (deadline.infinite()) {
      cv_.wait(lock, woken);
    } else if (!cv_.wait_until(lock, deadline.when(), woken)) {
      return Error(Code::kNotReady, "timed out");
    }
    return hung_up_ ? HungUp() : Status::Ok();
  }
  leader_ = true;
  lock.unlock();

  pollfd fds[2] = {{event_fd_, POLLIN, 0}, {socket_, POLLRDHUP, 0}};
  const int n = ::poll(fds, 2, deadline.PollTimeoutMs());
  bool hung_up = false;
  if (n > 0) {
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      // Non-blocking: EAGAIN only if the (hostile) peer drained it first; nothing to do then.
      (void)!::read(event_fd_, &count, sizeof(count));
    }
    // An unusable doorbell would make us spin; treat it like a hang-up.
    hung_up = (fds[1].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) ||
              (fds[0].revents & (POLLERR | POLLNVAL));
  }

  lock.lock();
  leader_ = false;
  ++generation_;
  if (hung_up) hung_up_ = true;
  lock.unlock();
  cv_.notify_all();
  if (hung_up) return HungUp();
  if (n == 0) return Error(Code::kNotReady, "timed out");
  return Status::Ok();  // woken, or EINTR: the caller re-checks its condition
}

void RingDoorbell(int event_fd) {
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = ::write(event_fd, &one, sizeof(one));
  } while (n < 0 && errno == EINTR);
}

}  // namespace pvgpu::transport::internal
