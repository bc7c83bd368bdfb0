// Host side of the local channel: the listening socket and the validation of a guest's set-up
// record. Everything the guest sends here is hostile until checked: the memfd must be a sealed
// regular file of exactly the announced size (else it could shrink under our mapping and SIGBUS
// the daemon), the doorbells must be eventfds, and the sizes must be sane.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

bool FillAddress(const std::string& path, sockaddr_un* addr) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// mkdir -p of the socket's directory.
Status MakeParentDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError(Code::kNotPermitted, "creating directory " + dir, errno);
    }
  }
  return Status::Ok();
}

// True when a process accepts connections on `path`.
bool SomeoneAnswers(const sockaddr_un& addr) {
  for (int type : {SOCK_SEQPACKET, SOCK_STREAM}) {
    // Non-blocking: a live but stuck daemon with a full backlog answers EAGAIN instead of
    // blocking us.
    UniqueFd probe(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe.valid()) continue;
    if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0 ||
        errno == EAGAIN) {
      return true;
    }
    if (errno != EPROTOTYPE) return false;  // ECONNREFUSED: nobody listens (stale file)
  }
  return false;
}

bool IsEventFd(int fd) {
  char link[64];
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(proc.c_str(), link, sizeof(link) - 1);
  if (n < 0) return false;
  link[n] = '\0';
  return std::strcmp(link, "anon_inode:[eventfd]") == 0;
}

bool ValidRing(uint64_t bytes) {
  return bytes >= kMinRingBytes && bytes <= kMaxRingBytes && (bytes & (bytes - 1)) == 0;
}

// Checks the set-up record and its descriptors; returns the reason to reject, or "".
std::string Validate(const internal::SetupRequest& request, size_t size,
                     std::vector<UniqueFd>& fds) {
  if (size != sizeof(request)) {
    return "set-up record has " + std::to_string(size) + " bytes, expected " +
           std::to_string(sizeof(request));
  }
  if (request.magic != internal::kSetupMagic) return "bad set-up magic (not a pvgpu guest?)";
  if (request.version != kTransportVersion) {
    return "transport version mismatch: guest speaks " + std::to_string(request.version) +
           ", pvgpud speaks " + std::to_string(kTransportVersion);
  }
  if (fds.size() != 3) {
    return "set-up record carries " + std::to_string(fds.size()) + " descriptors, expected 3";
  }
  if (!ValidRing(request.g2h_ring_bytes) || !ValidRing(request.h2g_ring_bytes)) {
    return "ring sizes must be powers of two in [64 KiB, 1 GiB]";
  }
  const uint64_t expected =
      internal::kHeaderBytes + request.g2h_ring_bytes + request.h2g_ring_bytes;
  if (Status memfd = VerifySealedMemfd(fds[0].get(), expected); !memfd.ok()) {
    return memfd.message();
  }
  // The rings must not grow either (exact layout), nor take seals we did not see.
  const int seals = ::fcntl(fds[0].get(), F_GET_SEALS);
  constexpr int kRequired = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  if ((seals & kRequired) != kRequired) {
    return "shared memory memfd is not sealed against shrink, grow and reseal";
  }
  if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) return "shared memory memfd is write-sealed";
  struct stat st;
  if (::fstat(fds[0].get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != expected) {
    return "shared memory memfd has " + std::to_string(st.st_size) + " bytes, expected " +
           std::to_string(expected);
  }
  for (int i : {1, 2}) {
    if (!IsEventFd(fds[i].get())) return "doorbell descriptor is not an eventfd";
    // Ours to read and write without blocking, whatever the guest set.
    const int flags = ::fcntl(fds[i].get(), F_GETFL);
    if (flags < 0 || ::fcntl(fds[i].get(), F_SETFL, flags | O_NONBLOCK) != 0) {
      return "cannot make a doorbell non-blocking";
    }
  }
  return "";
}

Status Reply(int sock, bool accepted, const std::string& reason) {
  internal::SetupReply reply{};
  reply.magic = internal::kReplyMagic;
  reply.version = kTransportVersion;
  reply.accepted = accepted ? 1 : 0;
  std::strncpy(reply.reason, reason.c_str(), sizeof(reply.reason) - 1);
  return internal::SendRecord(sock, {reinterpret_cast<const uint8_t*>(&reply), sizeof(reply)}, {});
}

StatusOr<std::unique_ptr<Endpoint>> ServerHandshake(UniqueFd sock, int pid, int uid,
                                                    const std::string& path, int timeout_ms,
                                                    int wake_fd) {
  const std::string who = "unix:" + path + " (guest pid " + std::to_string(pid) + ")";
  internal::SetupRequest request{};
  std::vector<UniqueFd> fds;
  StatusOr<size_t> got =
      internal::ReceiveRecord(sock.get(), reinterpret_cast<uint8_t*>(&request), sizeof(request), 3,
                              &fds, Deadline(timeout_ms), wake_fd);
  if (!got.ok()) {
    if (got.status().code() == Code::kDeviceUnavailable) {
      pollfd wake = {wake_fd, POLLIN, 0};
      if (wake_fd >= 0 && ::poll(&wake, 1, 0) == 1) {
        return Error(Code::kDeviceUnavailable, "listener shut down");
      }
      // Also what a liveness probe (a second daemon's Listen) looks like: not worth a warning.
      PVGPU_DEBUG("transport: " << who << " hung up before set-up");
      return Error(Code::kNotReady, who + " hung up before set-up");
    }
    Status status = got.status().code() == Code::kNotReady
                        ? Error(Code::kNotReady,
                                "no set-up record within " + std::to_string(timeout_ms) + " ms")
                        : got.status();
    PVGPU_WARN("transport: dropping " << who << ": " << status.message());
    return status.WithContext(who);
  }
  std::string reason = Validate(request, *got, fds);
  StatusOr<std::unique_ptr<Endpoint>> endpoint = Error(Code::kInvalidValue, reason);
  if (reason.empty()) {
    internal::ShmEndpointParts parts{
        .side = internal::Side::kHost,
        .socket = std::move(sock),
        .memfd = std::move(fds[0]),
        .doorbell_in = std::move(fds[1]),
        .doorbell_out = std::move(fds[2]),
        .g2h_ring_bytes = request.g2h_ring_bytes,
        .h2g_ring_bytes = request.h2g_ring_bytes,
        .description = who,
        .peer_pid = pid,
        .peer_uid = uid,
    };
    const int sock_fd = parts.socket.get();
    UniqueFd spare(::dup(sock_fd));  // to answer a rejection if Create fails (it owns sock)
    endpoint = internal::ShmEndpoint::Create(std::move(parts));
    if (endpoint.ok()) {
      Status sent = Reply(sock_fd, true, "");
      if (!sent.ok()) return sent.WithContext(who);
      PVGPU_INFO("transport: accepted " << who);
      return endpoint;
    }
    reason = endpoint.status().message();
    sock = std::move(spare);
  }
  PVGPU_WARN("transport: rejecting " << who << ": " << reason);
  (void)Reply(sock.get(), false, reason);
  return Error(Code::kInvalidValue, "rejected " + who + ": " + reason);
}

}  // namespace

Status VerifySealedMemfd(int fd, uint64_t min_bytes) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error(Code::kInvalidValue, "shared memory descriptor is not a regular file");
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return Error(Code::kInvalidValue, "shared memory descriptor is not a sealable memfd");
  }
  if (!(seals & F_SEAL_SHRINK)) {
    return Error(Code::kInvalidValue, "shared memory memfd is not sealed against shrinking");
  }
  // Checked after the seal: from here on the size cannot go down.
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < min_bytes) {
    return Error(Code::kInvalidValue, "shared memory memfd has " + std::to_string(st.st_size) +
                                          " bytes, expected " + std::to_string(min_bytes));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<UnixListener>> UnixListener::Listen(const std::string& path, int mode) {
  sockaddr_un addr;
  if (!FillAddress(path, &addr)) return Error(Code::kInvalidValue, "bad socket path: " + path);
  PVGPU_TRY(MakeParentDirectories(path));
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Error(Code::kIllegalState, path + " exists and is not a socket");
    }
    if (SomeoneAnswers(addr)) {
      return Error(Code::kIllegalState, "another pvgpud is serving " + path);
    }
    PVGPU_INFO("transport: replacing stale socket " << path);
    ::unlink(path.c_str());
  }
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock.valid()) return ErrnoError(Code::kUnknown, "socket", errno);
  if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    // EADDRINUSE: another daemon bound it between our check and now.
    return ErrnoError(Code::kIllegalState, "bind " + path, errno);
  }
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0 || ::listen(sock.get(), 128) != 0) {
    Status status = ErrnoError(Code::kNotPermitted, "chmod/listen " + path, errno);
    ::unlink(path.c_str());
    return status;
  }
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) {
    ::unlink(path.c_str());
    return ErrnoError(Code::kUnknown, "eventfd", errno);
  }
  std::unique_ptr<UnixListener> listener(new UnixListener(sock.release(), wake.release(), path));
  if (::stat(path.c_str(), &st) == 0) {
    listener->device_ = st.st_dev;
    listener->inode_ = st.st_ino;
  }
  return listener;
}

UnixListener::~UnixListener() {
  ::close(fd_);
  ::close(wake_fd_);
  // A successor daemon may already have replaced the file; only remove our own socket.
  struct stat st;
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) {
    ::unlink(path_.c_str());
  }
}

void UnixListener::Shutdown() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));  // never drained: every later Accept fails too
}

StatusOr<UnixListener::PendingGuest> UnixListener::AcceptPending() {
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(Code::kUnknown, "poll", errno);
    }
    if (fds[1].revents & POLLIN) return Error(Code::kDeviceUnavailable, "listener shut down");
    UniqueFd conn(::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) {
      if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) continue;
      return ErrnoError(Code::kUnknown, "accept", errno);
    }
    // SendFd must not hang on a guest that never reads its descriptors.
    const timeval send_timeout{5, 0};
    ::setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
    ucred cred{};
    socklen_t len = sizeof(cred);
    int pid = -1, uid = -1;
    if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      pid = cred.pid;
      uid = static_cast<int>(cred.uid);
    }
    return PendingGuest(conn.release(), pid, uid, path_);
  }
}

StatusOr<std::unique_ptr<Endpoint>> UnixListener::Accept() {
  PVGPU_ASSIGN_OR_RETURN(PendingGuest pending, AcceptPending());
  const int fd = pending.fd_;
  pending.fd_ = -1;
  return ServerHandshake(UniqueFd(fd), pending.pid_, pending.uid_, path_, handshake_timeout_ms_,
                         wake_fd_);
}

UnixListener::PendingGuest::PendingGuest(PendingGuest&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      pid_(other.pid_),
      uid_(other.uid_),
      path_(std::move(other.path_)) {}

UnixListener::PendingGuest& UnixListener::PendingGuest::operator=(PendingGuest&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    pid_ = other.pid_;
    uid_ = other.uid_;
    path_ = std::move(other.path_);
  }
  return *this;
}

UnixListener::PendingGuest::~PendingGuest() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::unique_ptr<Endpoint>> UnixListener::PendingGuest::Complete(int timeout_ms) {
  if (fd_ < 0) return Error(Code::kIllegalState, "PendingGuest already completed");
  return ServerHandshake(UniqueFd(std::exchange(fd_, -1)), pid_, uid_, path_, timeout_ms, -1);
}

}  // namespace pvgpu::transport
