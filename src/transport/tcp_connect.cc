// Guest side of the remote channel: resolve, connect, TLS, set-up record, endpoint.
#include <cstdlib>

#include "common/log.h"
#include "transport/channel.h"
#include "transport/tcp_endpoint.h"
#include "transport/tcp_setup.h"
#include "transport/tcp_socket.h"
#include "transport/tls_stream.h"

namespace pvgpu::transport {

using internal::Deadline;

bool IsRemoteAddress(const std::string& address) {
  return address.rfind("tcp://", 0) == 0 || address.rfind("tls://", 0) == 0;
}

StatusOr<std::string> ReadRemoteToken(const std::string& path) {
  return internal::ReadTokenFile(path);
}

StatusOr<RemoteOptions> GuestRemoteOptionsFromEnvironment() {
  RemoteOptions options;
  const char* token_file = std::getenv("PVGPU_TOKEN_FILE");
  const char* token = std::getenv("PVGPU_TOKEN");
  if (token_file != nullptr && *token_file) {
    PVGPU_ASSIGN_OR_RETURN(options.token, internal::ReadTokenFile(token_file));
  } else if (token != nullptr && *token) {
    options.token = token;
    PVGPU_TRY(internal::CheckToken(options.token, "PVGPU_TOKEN"));
  }
  if (const char* ca = std::getenv("PVGPU_TLS_CA"); ca != nullptr) options.tls_ca_file = ca;
  if (const char* suites = std::getenv("PVGPU_TLS_CIPHERSUITES"); suites != nullptr) {
    options.tls_ciphersuites = suites;
  }
  return options;
}

namespace internal {

StatusOr<GuestConnection> ConnectGuest(const std::string& address, const RemoteOptions& options,
                                       SetupPurpose purpose) {
  GuestConnection out;
  PVGPU_ASSIGN_OR_RETURN(out.remote, ParseRemoteAddress(address));
  const RemoteAddress& remote = out.remote;
  if (remote.tls && options.token.empty()) {
    return Error(Code::kInvalidValue,
                 address + " needs a token: set PVGPU_TOKEN_FILE (or PVGPU_TOKEN)");
  }
  // Load the trust anchors before touching the network, so a bad PVGPU_TLS_CA says so.
  std::shared_ptr<TlsContext> tls;
  if (remote.tls) {
    PVGPU_ASSIGN_OR_RETURN(tls,
                           TlsContext::ForClient(options.tls_ca_file, options.tls_ciphersuites));
  }
  const Deadline deadline(options.connect_timeout_ms);
  PVGPU_ASSIGN_OR_RETURN(auto addresses, Resolve(remote, false));
  PVGPU_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(addresses, deadline, &out.peer));
  PVGPU_TRY(ConfigureStreamSocket(fd.get(), options.dead_after_ms));
  if (remote.tls) {
    auto secured = TlsConnect(*tls, std::move(fd), remote.host, deadline);
    if (!secured.ok()) {
      const Status& status = secured.status();
      return Error(status.code() == Code::kNotReady ? Code::kNoDevice : status.code(),
                   "TLS with " + address + " failed: " + status.message() +
                       (status.code() == Code::kNotPermitted
                            ? " (is PVGPU_TLS_CA the CA that signed the host's certificate, "
                              "and does the certificate name " +
                                  remote.host + "?)"
                            : ""));
    }
    out.stream = std::move(secured).value();
  } else {
    out.stream = MakePlainStream(std::move(fd));
  }
  if (purpose == SetupPurpose::kProbe && out.stream->kernel_tls()) {
    return Error(Code::kNotSupported,
                 "no path probe over kernel TLS (the kernel seals every byte)");
  }
  auto max_message = GuestSetup(*out.stream, options.token, deadline, purpose);
  if (!max_message.ok()) {
    const Status& status = max_message.status();
    return Error(status.code() == Code::kNotReady ? Code::kNoDevice : status.code(),
                 address + ": " + status.message());
  }
  out.max_message_size = *max_message;
  return out;
}

}  // namespace internal

StatusOr<std::unique_ptr<Endpoint>> ConnectRemote(const std::string& address,
                                                  const RemoteOptions& options) {
  PVGPU_ASSIGN_OR_RETURN(
      internal::GuestConnection connection,
      internal::ConnectGuest(address, options, internal::SetupPurpose::kSession));
  internal::StreamEndpointOptions endpoint;
  endpoint.max_message_size =
      std::min<size_t>(options.max_message_size, connection.max_message_size);
  endpoint.heartbeat_ms = options.heartbeat_ms;
  endpoint.dead_after_ms = options.dead_after_ms;
  endpoint.description = connection.remote.ToString();
  if (const std::string security = connection.stream->Security(); !security.empty()) {
    endpoint.description += " (" + security + ")";
  }
  PVGPU_DEBUG("connected to " << connection.remote.ToString() << " (" << connection.peer << ")");
  return internal::MakeStreamEndpoint(std::move(connection.stream), endpoint);
}

}  // namespace pvgpu::transport
