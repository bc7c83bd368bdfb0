// Host side of the remote channel. An accept thread takes connections; each is set up (TLS
// handshake, set-up record with the token) on its own thread under a deadline, so a silent or
// hostile client delays no one. Refusals are logged with the reason; the listener goes on.
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "transport/channel.h"
#include "transport/tcp_endpoint.h"
#include "transport/tcp_probe.h"
#include "transport/tcp_setup.h"
#include "transport/tcp_socket.h"
#include "transport/tls_stream.h"

namespace pvgpu::transport {

using internal::Deadline;
using internal::ErrnoError;
using internal::UniqueFd;

namespace {
// More simultaneous set-ups than this are dropped at once (a flood of silent connections
// should not become a flood of threads).
constexpr size_t kMaxPendingSetups = 64;
}  // namespace

struct RemoteListener::State {
  RemoteOptions options;
  internal::RemoteAddress address;
  std::string bound;  // address with the actual port
  std::shared_ptr<internal::TlsContext> tls;
  UniqueFd socket;
  UniqueFd wake;
  std::thread accept_thread;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::deque<std::unique_ptr<Endpoint>> ready;
  struct Setup {
    std::thread thread;
    bool done = false;
  };
  std::list<Setup> setups;

  void AcceptLoop();
  void SetUp(UniqueFd fd, std::string peer, Setup* self);
  void ReapLocked() {
    for (auto it = setups.begin(); it != setups.end();) {
      if (it->done) {
        it->thread.join();
        it = setups.erase(it);
      } else {
        ++it;
      }
    }
  }
};

void RemoteListener::State::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{socket.get(), POLLIN, 0}, {wake.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    internal::SocketAddress peer_address;
    peer_address.length = sizeof(peer_address.storage);
    UniqueFd fd(::accept4(socket.get(), reinterpret_cast<sockaddr*>(&peer_address.storage),
                          &peer_address.length, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        PVGPU_WARN("accept on " << bound << ": " << std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // e.g. out of fds
      }
      continue;
    }
    std::string peer = internal::DescribeSocketAddress(peer_address);
    std::lock_guard<std::mutex> lock(mu);
    ReapLocked();
    if (setups.size() >= kMaxPendingSetups) {
      PVGPU_WARN("dropped a connection from " << peer << " on " << bound << ": "
                                              << kMaxPendingSetups << " set-ups in progress");
      continue;
    }
    setups.emplace_back();
    Setup* setup = &setups.back();
    setup->thread = std::thread(
        [this, setup, peer, raw = fd.release()]() mutable { SetUp(UniqueFd(raw), peer, setup); });
  }
}

void RemoteListener::State::SetUp(UniqueFd fd, std::string peer, Setup* self) {
  const Deadline deadline(options.connect_timeout_ms);
  auto finish = [&](std::unique_ptr<Endpoint> endpoint) {
    std::lock_guard<std::mutex> lock(mu);
    if (endpoint != nullptr && !stopping) {
      ready.push_back(std::move(endpoint));
      cv.notify_all();
    }
    self->done = true;
  };
  auto refuse = [&](const std::string& reason) {
    PVGPU_WARN("refused a guest from " << peer << " on " << bound << ": " << reason);
    finish(nullptr);
  };
  Status configured = internal::ConfigureStreamSocket(fd.get(), options.dead_after_ms);
  if (!configured.ok()) return refuse(configured.message());
  std::unique_ptr<internal::ByteStream> stream;
  if (tls) {
    auto secured = internal::TlsAccept(*tls, std::move(fd), deadline);
    if (!secured.ok()) {
      return refuse("TLS handshake failed: " + secured.status().message() +
                    " (a plain tcp:// guest, or one that does not trust this certificate?)");
    }
    stream = std::move(secured).value();
  } else {
    stream = internal::MakePlainStream(std::move(fd));
  }
  internal::SetupPurpose purpose = internal::SetupPurpose::kSession;
  Status setup = internal::HostSetup(*stream, tls ? options.token : std::string(),
                                     static_cast<uint32_t>(options.max_message_size), deadline,
                                     &purpose, !stream->kernel_tls());
  if (!setup.ok()) return refuse(setup.message());
  if (purpose == internal::SetupPurpose::kProbe) {
    // A benchmark measuring the path: served here, on the set-up thread, never a session.
    PVGPU_DEBUG("serving a path probe for " << peer << " on " << bound);
    internal::ServeProbe(*stream, peer);
    return finish(nullptr);
  }
  internal::StreamEndpointOptions endpoint;
  endpoint.max_message_size = options.max_message_size;
  endpoint.heartbeat_ms = options.heartbeat_ms;
  endpoint.dead_after_ms = options.dead_after_ms;
  endpoint.description = bound + " from " + peer;
  if (const std::string security = stream->Security(); !security.empty()) {
    endpoint.description += " (" + security + ")";
  }
  PVGPU_DEBUG("guest from " << peer << " passed set-up on " << bound);
  finish(internal::MakeStreamEndpoint(std::move(stream), endpoint));
}

StatusOr<std::unique_ptr<RemoteListener>> RemoteListener::Listen(const std::string& address,
                                                                 const RemoteOptions& options) {
  auto state = std::make_unique<State>();
  state->options = options;
  PVGPU_ASSIGN_OR_RETURN(state->address, internal::ParseRemoteAddress(address));
  PVGPU_ASSIGN_OR_RETURN(auto addresses, internal::Resolve(state->address, true));
  if (!state->address.tls) {
    for (const auto& candidate : addresses) {
      if (!internal::IsLoopback(candidate)) {
        return Error(Code::kNotPermitted,
                     "plain tcp:// (no TLS, no token) is allowed only on loopback addresses "
                     "(127.0.0.0/8, ::1, localhost), and " +
                         state->address.host + " is not one; use tls://" + address.substr(6) +
                         " with --tls-cert, --tls-key and --token-file");
      }
    }
  } else {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty() || options.token.empty()) {
      return Error(Code::kInvalidValue,
                   "tls:// needs a certificate, a key and a token (--tls-cert, --tls-key, "
                   "--token-file)");
    }
    PVGPU_TRY(internal::CheckToken(options.token, "the token file"));
    PVGPU_ASSIGN_OR_RETURN(
        state->tls, internal::TlsContext::ForServer(options.tls_cert_file, options.tls_key_file,
                                                    options.tls_ciphersuites));
  }
  const internal::SocketAddress& bind_address = addresses.front();
  state->socket = UniqueFd(::socket(bind_address.storage.ss_family,
                                    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP));
  if (!state->socket.valid()) return ErrnoError(Code::kUnknown, "socket", errno);
  const int one = 1;
  ::setsockopt(state->socket.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(state->socket.get(), bind_address.get(), bind_address.length) != 0) {
    return ErrnoError(Code::kIllegalState, "bind " + address, errno);
  }
  if (::listen(state->socket.get(), 128) != 0) {
    return ErrnoError(Code::kIllegalState, "listen " + address, errno);
  }
  internal::SocketAddress bound;
  bound.length = sizeof(bound.storage);
  ::getsockname(state->socket.get(), reinterpret_cast<sockaddr*>(&bound.storage), &bound.length);
  internal::RemoteAddress actual = state->address;
  const std::string text = internal::DescribeSocketAddress(bound);
  actual.port = static_cast<uint16_t>(std::stoi(text.substr(text.rfind(':') + 1)));
  state->bound = actual.ToString();
  state->wake = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!state->wake.valid()) return ErrnoError(Code::kUnknown, "eventfd", errno);
  State* raw = state.get();
  state->accept_thread = std::thread([raw] { raw->AcceptLoop(); });
  return std::unique_ptr<RemoteListener>(new RemoteListener(std::move(state)));
}

RemoteListener::RemoteListener(std::unique_ptr<State> state) : state_(std::move(state)) {}

RemoteListener::~RemoteListener() { Shutdown(); }

const std::string& RemoteListener::address() const { return state_->bound; }

StatusOr<std::unique_ptr<Endpoint>> RemoteListener::Accept() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->stopping || !state_->ready.empty(); });
  if (state_->stopping) return Error(Code::kDeviceUnavailable, "listener shut down");
  auto endpoint = std::move(state_->ready.front());
  state_->ready.pop_front();
  return endpoint;
}

void RemoteListener::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->stopping) return;
    state_->stopping = true;
    state_->cv.notify_all();
  }
  const uint64_t one = 1;
  (void)!::write(state_->wake.get(), &one, sizeof(one));
  state_->accept_thread.join();
  // Set-ups end by their deadline at the latest; their endpoints are dropped (stopping).
  std::list<State::Setup> setups;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    setups.swap(state_->setups);
  }
  for (auto& setup : setups) setup.thread.join();
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->ready.clear();
}

}  // namespace pvgpu::transport
