#include "tools/host_address.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace pvgpu::tools {
namespace {

constexpr char kAcceptedForms[] =
    "expected unix:PATH, an absolute or relative socket path, tcp://HOST:PORT or "
    "tls://HOST:PORT";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

Status CheckHostPort(const std::string& text, std::string_view host_port) {
  // The port is the part after the last colon so that bracketed IPv6 literals ("[::1]:7000")
  // keep their inner colons.
  size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == host_port.size()) {
    return Error(Code::kInvalidValue,
                 "invalid host address '" + text + "': missing HOST:PORT after the scheme");
  }
  std::string_view port = host_port.substr(colon + 1);
  long value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') {
      return Error(Code::kInvalidValue, "invalid host address '" + text + "': port '" +
                                            std::string(port) + "' is not a number");
    }
    value = value * 10 + (c - '0');
    if (value > 65535) break;
  }
  if (value == 0 || value > 65535) {
    return Error(Code::kInvalidValue, "invalid host address '" + text + "': port '" +
                                          std::string(port) + "' is out of range (1-65535)");
  }
  return Status::Ok();
}

}  // namespace

size_t MaxUnixSocketPathLength() { return sizeof(sockaddr_un::sun_path) - 1; }

StatusOr<HostAddress> ParseHostAddress(const std::string& text) {
  HostAddress address;
  address.original = text;
  std::string_view view = text;
  if (view.empty()) {
    return Error(Code::kInvalidValue, std::string("empty host address; ") + kAcceptedForms);
  }
  if (StartsWith(view, "tcp://") || StartsWith(view, "tls://")) {
    address.kind = StartsWith(view, "tcp://") ? HostAddress::Kind::kTcp : HostAddress::Kind::kTls;
    std::string_view host_port = view.substr(6);
    PVGPU_TRY(CheckHostPort(text, host_port));
    address.target = std::string(host_port);
    return address;
  }
  std::string_view path = view;
  if (StartsWith(view, "unix://")) {
    path = view.substr(7);
  } else if (StartsWith(view, "unix:")) {
    path = view.substr(5);
  } else if (view.find("://") != std::string_view::npos) {
    return Error(Code::kInvalidValue, "unsupported host address '" + text + "'; " + kAcceptedForms);
  }
  if (path.empty()) {
    return Error(Code::kInvalidValue, "invalid host address '" + text + "': empty socket path");
  }
  if (path.size() > MaxUnixSocketPathLength()) {
    return Error(Code::kInvalidValue, "invalid host address '" + text + "': socket path is " +
                                          std::to_string(path.size()) + " bytes, the limit is " +
                                          std::to_string(MaxUnixSocketPathLength()));
  }
  address.kind = HostAddress::Kind::kUnix;
  address.target = std::string(path);
  return address;
}

bool IsReachable(const HostAddress& address) {
  if (address.kind != HostAddress::Kind::kUnix) return true;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, address.target.data(), address.target.size());
  // pvgpud's channel is SOCK_SEQPACKET; a stream listener is tried too so that the answer
  // does not depend on the transport's choice. Connecting to the wrong type fails with
  // EPROTOTYPE, which still proves that something listens.
  for (int type : {SOCK_SEQPACKET, SOCK_STREAM}) {
    // Non-blocking: a live daemon with a full backlog answers EAGAIN instead of blocking us.
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    int err = errno;
    close(fd);
    if (rc == 0 || err == EAGAIN) return true;
    if (err != EPROTOTYPE) return false;  // ECONNREFUSED: a stale socket file, nobody listens.
  }
  return false;
}

}  // namespace pvgpu::tools
