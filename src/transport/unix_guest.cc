// Guest side of the local channel: connect, create the shared memfd and doorbells, hand them to
// the host in one set-up record, and wait for its verdict.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "transport/channel.h"
#include "transport/fd_util.h"
#include "transport/shm_endpoint.h"
#include "transport/shm_layout_unsafe.h"

namespace pvgpu::transport {
namespace {

using internal::Deadline;
using internal::ErrnoError;
using internal::UniqueFd;

StatusOr<UniqueFd> MakeEventFd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd.valid()) return ErrnoError(Code::kOutOfMemory, "eventfd", errno);
  return fd;
}

StatusOr<UniqueFd> MakeRingsMemfd(size_t bytes) {
  UniqueFd fd(::memfd_create("pvgpu-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ErrnoError(Code::kOutOfMemory, "memfd_create", errno);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return ErrnoError(Code::kOutOfMemory, "ftruncate of the channel memfd", errno);
  }
  // The host maps this file: without these seals we could shrink it under the host's mapping
  // and make it fault (SIGBUS). The host checks them before mapping.
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return ErrnoError(Code::kUnknown, "sealing the channel memfd", errno);
  }
  return fd;
}

}  // namespace

StatusOr<std::unique_ptr<Endpoint>> ConnectUnix(const std::string& path,
                                                const ShmOptions& options) {
  const size_t ring = options.ring_bytes;
  if (ring < kMinRingBytes || ring > kMaxRingBytes || (ring & (ring - 1)) != 0) {
    return Error(Code::kInvalidValue, "ring_bytes " + std::to_string(ring) +
                                          " must be a power of two in [64 KiB, 1 GiB]");
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Error(Code::kInvalidValue, "socket path too long: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return ErrnoError(Code::kDeviceUnavailable, "socket", errno);
  int rc;
  do {
    rc = ::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    return ErrnoError(Code::kDeviceUnavailable, "cannot connect to pvgpud at " + path, errno);
  }

  PVGPU_ASSIGN_OR_RETURN(UniqueFd memfd, MakeRingsMemfd(internal::kHeaderBytes + 2 * ring));
  PVGPU_ASSIGN_OR_RETURN(UniqueFd to_host, MakeEventFd());
  PVGPU_ASSIGN_OR_RETURN(UniqueFd to_guest, MakeEventFd());

  internal::SetupRequest request{};
  request.magic = internal::kSetupMagic;
  request.version = kTransportVersion;
  request.g2h_ring_bytes = ring;
  request.h2g_ring_bytes = ring;
  const int fds[3] = {memfd.get(), to_host.get(), to_guest.get()};
  Status sent = internal::SendRecord(
      sock.get(), {reinterpret_cast<const uint8_t*>(&request), sizeof(request)}, fds);
  if (!sent.ok()) return sent.WithContext("set-up with pvgpud at " + path);

  internal::SetupReply reply{};
  std::vector<UniqueFd> no_fds;
  StatusOr<size_t> got =
      internal::ReceiveRecord(sock.get(), reinterpret_cast<uint8_t*>(&reply), sizeof(reply), 0,
                              &no_fds, Deadline(options.connect_timeout_ms));
  if (!got.ok()) {
    return Error(Code::kDeviceUnavailable,
                 "no set-up answer from pvgpud at " + path + ": " + got.status().message());
  }
  if (*got != sizeof(reply) || reply.magic != internal::kReplyMagic) {
    return Error(Code::kDeviceUnavailable, "malformed set-up answer from " + path);
  }
  if (reply.accepted != 1) {
    reply.reason[sizeof(reply.reason) - 1] = '\0';
    return Error(Code::kDeviceUnavailable,
                 "pvgpud at " + path + " rejected the connection: " + reply.reason);
  }

  internal::ShmEndpointParts parts{
      .side = internal::Side::kGuest,
      .socket = std::move(sock),
      .memfd = std::move(memfd),
      .doorbell_in = std::move(to_guest),
      .doorbell_out = std::move(to_host),
      .g2h_ring_bytes = ring,
      .h2g_ring_bytes = ring,
      .description = "unix:" + path + " (pid " + std::to_string(::getpid()) + ")",
  };
  PVGPU_DEBUG("transport: connected to " << path);
  return internal::ShmEndpoint::Create(std::move(parts));
}

}  // namespace pvgpu::transport
