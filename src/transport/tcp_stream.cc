#include "transport/tcp_stream.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

namespace pvgpu::transport::internal {
namespace {

class PlainStream final : public ByteStream {
 public:
  explicit PlainStream(UniqueFd fd) : fd_(std::move(fd)) {}

  IoResult Read(uint8_t* data, size_t size) override {
    for (;;) {
      const ssize_t n = ::recv(fd_.get(), data, size, 0);
      if (n > 0) return {IoResult::kDone, static_cast<size_t>(n), {}};
      if (n == 0) return {IoResult::kEof, 0, {}};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {IoResult::kWantRead, 0, {}};
      return {IoResult::kError, 0, std::strerror(errno)};
    }
  }

  IoResult Write(const uint8_t* data, size_t size) override {
    for (;;) {
      const ssize_t n = ::send(fd_.get(), data, size, MSG_NOSIGNAL);
      if (n > 0) return {IoResult::kDone, static_cast<size_t>(n), {}};
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {IoResult::kWantWrite, 0, {}};
      return {IoResult::kError, 0, n == 0 ? "short write" : std::strerror(errno)};
    }
  }

  IoResult Writev(std::span<const std::span<const uint8_t>> pieces) override {
    iovec vectors[64];
    size_t count = 0;
    for (const auto& piece : pieces) {
      if (count == std::size(vectors)) break;
      if (piece.empty()) continue;
      vectors[count++] = {const_cast<uint8_t*>(piece.data()), piece.size()};
    }
    msghdr message{};
    message.msg_iov = vectors;
    message.msg_iovlen = count;
    for (;;) {
      const ssize_t n = ::sendmsg(fd_.get(), &message, MSG_NOSIGNAL);
      if (n > 0) return {IoResult::kDone, static_cast<size_t>(n), {}};
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {IoResult::kWantWrite, 0, {}};
      return {IoResult::kError, 0, n == 0 ? "short write" : std::strerror(errno)};
    }
  }

  bool duplex() const override { return true; }
  bool buffers_input() const override { return false; }
  void ShutdownWrite() override { ::shutdown(fd_.get(), SHUT_WR); }
  int fd() const override { return fd_.get(); }

 private:
  UniqueFd fd_;
};

}  // namespace

IoResult ByteStream::Writev(std::span<const std::span<const uint8_t>> pieces) {
  for (const auto& piece : pieces) {
    if (!piece.empty()) return Write(piece.data(), piece.size());
  }
  return {IoResult::kError, 0, "nothing to write"};
}

std::unique_ptr<ByteStream> MakePlainStream(UniqueFd fd) {
  return std::make_unique<PlainStream>(std::move(fd));
}

bool PollFor(int fd, IoResult::Kind kind, const Deadline& deadline) {
  pollfd p{fd, static_cast<short>(kind == IoResult::kWantWrite ? POLLOUT : POLLIN), 0};
  for (;;) {
    const int ready = ::poll(&p, 1, deadline.PollTimeoutMs());
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return true;  // let the next read or write report the error
  }
}

namespace {

// Moves `size` bytes with `io(offset, count)` (one Read or Write call), waiting for the socket
// between partial transfers until `deadline`.
template <typename Io>
Status TransferAll(ByteStream& stream, size_t size, const Deadline& deadline, Io io,
                   const char* timeout_message) {
  size_t done = 0;
  while (done < size) {
    IoResult r = io(done, size - done);
    switch (r.kind) {
      case IoResult::kDone:
        done += r.bytes;
        break;
      case IoResult::kWantRead:
      case IoResult::kWantWrite:
        if (!PollFor(stream.fd(), r.kind, deadline)) return Error(Code::kNotReady, timeout_message);
        break;
      case IoResult::kEof:
        return Error(Code::kDeviceUnavailable, "peer closed the connection");
      case IoResult::kError:
        return Error(Code::kDeviceUnavailable, r.error);
    }
  }
  return Status::Ok();
}

}  // namespace

ScopedNoSigpipe::ScopedNoSigpipe() {
  sigemptyset(&pipe_);
  sigaddset(&pipe_, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  // A SIGPIPE already pending for other reasons is left for the application.
  already_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &saved_) == 0;
}

ScopedNoSigpipe::~ScopedNoSigpipe() {
  if (!blocked_) return;
  const int saved_errno = errno;
  if (!already_pending_) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  errno = saved_errno;
}

Status WriteAll(ByteStream& stream, std::span<const uint8_t> bytes, const Deadline& deadline) {
  ScopedNoSigpipe no_sigpipe;
  PVGPU_TRY(TransferAll(
      stream, bytes.size(), deadline,
      [&](size_t offset, size_t count) { return stream.Write(bytes.data() + offset, count); },
      "timed out sending the set-up record"));
  for (;;) {
    const IoResult r = stream.Flush();
    if (r.kind == IoResult::kDone) return Status::Ok();
    if (r.kind != IoResult::kWantWrite && r.kind != IoResult::kWantRead) {
      return Error(Code::kDeviceUnavailable,
                   r.error.empty() ? "peer closed the connection" : r.error);
    }
    if (!PollFor(stream.fd(), r.kind, deadline)) {
      return Error(Code::kNotReady, "timed out sending the set-up record");
    }
  }
}

Status ReadExact(ByteStream& stream, std::span<uint8_t> bytes, const Deadline& deadline) {
  ScopedNoSigpipe no_sigpipe;  // a TLS read may write (alerts, key updates)
  return TransferAll(
      stream, bytes.size(), deadline,
      [&](size_t offset, size_t count) { return stream.Read(bytes.data() + offset, count); },
      "timed out waiting for the set-up record");
}

}  // namespace pvgpu::transport::internal
