#include "transport/fd_util.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pvgpu::transport::internal {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Deadline::Deadline(int timeout_ms)
    : infinite_(timeout_ms < 0),
      when_(std::chrono::steady_clock::now() +
            std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms)) {}

bool Deadline::expired() const { return !infinite_ && std::chrono::steady_clock::now() >= when_; }

int Deadline::PollTimeoutMs() const {
  if (infinite_) return -1;
  const auto left = when_ - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(left).count();
  return static_cast<int>(std::min<int64_t>((us + 999) / 1000, 1 << 30));
}

Status ErrnoError(Code code, const std::string& what, int err) {
  return Error(code, what + ": " + std::strerror(err));
}

Status SendRecord(int socket, std::span<const uint8_t> bytes, std::span<const int> fds) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  if (!fds.empty()) {
    if (fds.size() > 4) return Error(Code::kInvalidValue, "too many descriptors for one record");
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes.size())) return Status::Ok();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)) {
      return ErrnoError(Code::kDeviceUnavailable, "peer closed the channel", errno);
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Error(Code::kDeviceUnavailable, "peer is not reading (send timed out)");
    }
    if (n < 0) return ErrnoError(Code::kDeviceUnavailable, "sendmsg", errno);
    return Error(Code::kDeviceUnavailable, "sendmsg: short write");
  }
}

StatusOr<size_t> ReceiveRecord(int socket, uint8_t* buffer, size_t capacity, size_t max_fds,
                               std::vector<UniqueFd>* fds, const Deadline& deadline, int wake_fd) {
  for (;;) {
    pollfd pfds[2] = {{socket, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int n = ::poll(pfds, wake_fd >= 0 ? 2 : 1, deadline.PollTimeoutMs());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(Code::kUnknown, "poll", errno);
    if (wake_fd >= 0 && (pfds[1].revents & POLLIN)) {
      return Error(Code::kDeviceUnavailable, "shut down");
    }
    if (n == 0) return Error(Code::kNotReady, "timed out waiting for the peer");
    break;  // readable or hung up: recvmsg tells which
  }
  iovec iov{buffer, capacity};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return Error(Code::kNotReady, "no record ready");
  if (n < 0) return ErrnoError(Code::kDeviceUnavailable, "recvmsg", errno);
  // Take ownership of every descriptor first, so that no error path below leaks one.
  std::vector<UniqueFd> received;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      received.emplace_back(fd);
    }
  }
  if (n == 0) return Error(Code::kDeviceUnavailable, "peer closed the channel");
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    return Error(Code::kInvalidValue, "record or its descriptors truncated");
  }
  if (received.size() > max_fds) {
    return Error(Code::kInvalidValue, "record carries " + std::to_string(received.size()) +
                                          " descriptors, expected at most " +
                                          std::to_string(max_fds));
  }
  *fds = std::move(received);
  return static_cast<size_t>(n);
}

}  // namespace pvgpu::transport::internal
