#include "transport/tcp_probe.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <vector>

#include "common/log.h"
#include "transport/channel.h"
#include "transport/tcp_setup.h"
#include "transport/tls_cipher.h"

namespace pvgpu::transport {
namespace internal {
namespace {

using Clock = std::chrono::steady_clock;

// Moves exactly `size` bytes (recv or send as `read` says) on a non-blocking socket, waiting in
// poll as needed, until `deadline`. False on timeout, error or end of stream.
bool Move(int fd, bool read, void* data, size_t size, const Deadline& deadline) {
  auto* bytes = static_cast<uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = read ? ::recv(fd, bytes, size, 0) : ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (n > 0) {
      bytes += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0 && read) return false;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    pollfd p{fd, static_cast<short>(read ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, deadline.PollTimeoutMs()) <= 0) return false;
  }
  return true;
}

// Streams `count` bytes one way in chunks of `buffer`.
bool Stream(int fd, bool read, std::vector<uint8_t>& buffer, uint64_t count,
            const Deadline& deadline) {
  while (count > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(count, buffer.size()));
    if (!Move(fd, read, buffer.data(), chunk, deadline)) return false;
    count -= chunk;
  }
  return true;
}

}  // namespace

void ServeProbe(ByteStream& stream, const std::string& who) {
  const Deadline deadline(kProbeLimitMs);
  const int fd = stream.fd();
  std::vector<uint8_t> buffer(1u << 20);
  uint64_t echo = 0;
  for (;;) {
    ProbeCommand command{};
    if (!Move(fd, true, &command, sizeof(command), deadline)) break;
    bool ok = false;
    switch (command.op) {
      case kPing:
        ok = command.count <= kMaxProbePings;
        for (uint64_t i = 0; ok && i < command.count; ++i) {
          ok = Move(fd, true, &echo, sizeof(echo), deadline) &&
               Move(fd, false, &echo, sizeof(echo), deadline);
        }
        break;
      case kSink:
        ok = command.count <= kMaxProbeBytes && Stream(fd, true, buffer, command.count, deadline) &&
             Move(fd, false, &command.count, sizeof(command.count), deadline);
        break;
      case kSource:
        std::fill(buffer.begin(), buffer.end(), 0);
        ok = command.count <= kMaxProbeBytes && Stream(fd, false, buffer, command.count, deadline);
        break;
      default:
        break;
    }
    if (!ok) break;
  }
  PVGPU_DEBUG("path probe from " << who << " ended");
}

}  // namespace internal

struct RemotePathProbe::State {
  internal::GuestConnection connection;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(1u << 20);
  Status Command(internal::ProbeOp op, uint64_t count) {
    const internal::ProbeCommand command{op, 0, count};
    if (!internal::Move(connection.stream->fd(), false,
                        const_cast<internal::ProbeCommand*>(&command), sizeof(command),
                        internal::Deadline(internal::kProbeLimitMs))) {
      return Error(Code::kDeviceUnavailable, "the path probe's connection failed");
    }
    return Status::Ok();
  }
};

StatusOr<std::unique_ptr<RemotePathProbe>> RemotePathProbe::Connect(const std::string& address,
                                                                    const RemoteOptions& options) {
  auto state = std::make_unique<State>();
  PVGPU_ASSIGN_OR_RETURN(state->connection,
                         internal::ConnectGuest(address, options, internal::SetupPurpose::kProbe));
  return std::unique_ptr<RemotePathProbe>(new RemotePathProbe(std::move(state)));
}

RemotePathProbe::RemotePathProbe(std::unique_ptr<State> state) : state_(std::move(state)) {}
RemotePathProbe::~RemotePathProbe() = default;

std::string RemotePathProbe::security() const { return state_->connection.stream->Security(); }

StatusOr<double> RemotePathProbe::CipherBytesPerSecond(const std::string& suite, double seconds) {
  return internal::MeasureCipherBytesPerSecond(suite, seconds);
}

StatusOr<double> RemotePathProbe::RoundTripMicros(int count) {
  if (count < 1 || static_cast<uint64_t>(count) > internal::kMaxProbePings) {
    return Error(Code::kInvalidValue,
                 "round trips: 1 to " + std::to_string(internal::kMaxProbePings));
  }
  PVGPU_TRY(state_->Command(internal::kPing, static_cast<uint64_t>(count)));
  const int fd = state_->connection.stream->fd();
  const internal::Deadline deadline(internal::kProbeLimitMs);
  uint64_t ping = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    if (!internal::Move(fd, false, &ping, sizeof(ping), deadline) ||
        !internal::Move(fd, true, &ping, sizeof(ping), deadline)) {
      return Error(Code::kDeviceUnavailable, "the path probe's round trips failed");
    }
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
             .count() /
         count;
}

StatusOr<double> RemotePathProbe::SendBytesPerSecond(uint64_t bytes) {
  if (bytes < 1 || bytes > internal::kMaxProbeBytes) {
    return Error(Code::kInvalidValue, "probe sizes: 1 byte to 64 GiB");
  }
  PVGPU_TRY(state_->Command(internal::kSink, bytes));
  const int fd = state_->connection.stream->fd();
  const internal::Deadline deadline(internal::kProbeLimitMs);
  uint64_t ack = 0;
  const auto start = std::chrono::steady_clock::now();
  if (!internal::Stream(fd, false, state_->buffer, bytes, deadline) ||
      !internal::Move(fd, true, &ack, sizeof(ack), deadline) || ack != bytes) {
    return Error(Code::kDeviceUnavailable, "the path probe's upload failed");
  }
  return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

StatusOr<double> RemotePathProbe::ReceiveBytesPerSecond(uint64_t bytes) {
  if (bytes < 1 || bytes > internal::kMaxProbeBytes) {
    return Error(Code::kInvalidValue, "probe sizes: 1 byte to 64 GiB");
  }
  PVGPU_TRY(state_->Command(internal::kSource, bytes));
  const int fd = state_->connection.stream->fd();
  const internal::Deadline deadline(internal::kProbeLimitMs);
  const auto start = std::chrono::steady_clock::now();
  if (!internal::Stream(fd, true, state_->buffer, bytes, deadline)) {
    return Error(Code::kDeviceUnavailable, "the path probe's download failed");
  }
  return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace pvgpu::transport
