#include "transport/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace pvgpu::transport::internal {

std::string RemoteAddress::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "tls://" : "tcp://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

StatusOr<RemoteAddress> ParseRemoteAddress(const std::string& address) {
  RemoteAddress out;
  std::string rest;
  if (address.rfind("tls://", 0) == 0) {
    out.tls = true;
    rest = address.substr(6);
  } else if (address.rfind("tcp://", 0) == 0) {
    rest = address.substr(6);
  } else {
    return Error(Code::kInvalidValue,
                 "'" + address + "' is not a remote address (tcp://HOST:PORT or tls://HOST:PORT)");
  }
  std::string port_text;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return Error(Code::kInvalidValue, "'" + address + "': expected [IPv6]:PORT");
    }
    out.host = rest.substr(1, close - 1);
    port_text = rest.substr(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || rest.find(':') != colon) {
      return Error(Code::kInvalidValue,
                   "'" + address + "': expected HOST:PORT (IPv6 literals in brackets)");
    }
    out.host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  }
  unsigned port = 0;
  const auto parsed = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (out.host.empty() || port_text.empty() || parsed.ec != std::errc() ||
      parsed.ptr != port_text.data() + port_text.size() || port > 65535) {
    return Error(Code::kInvalidValue, "'" + address + "': bad host or port");
  }
  out.port = static_cast<uint16_t>(port);
  return out;
}

StatusOr<std::vector<SocketAddress>> Resolve(const RemoteAddress& address, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  if (IsIpLiteral(address.host)) hints.ai_flags |= AI_NUMERICHOST;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    return Error(Code::kInvalidValue,
                 "cannot resolve '" + address.host + "': " + ::gai_strerror(rc));
  }
  std::vector<SocketAddress> out;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress entry;
    std::memcpy(&entry.storage, ai->ai_addr, ai->ai_addrlen);
    entry.length = ai->ai_addrlen;
    out.push_back(entry);
  }
  ::freeaddrinfo(list);
  if (out.empty()) return Error(Code::kInvalidValue, "'" + address.host + "' has no address");
  return out;
}

bool IsLoopback(const SocketAddress& address) {
  if (address.storage.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address.storage);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (address.storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

bool IsIpLiteral(const std::string& host) {
  in6_addr buffer;
  return ::inet_pton(AF_INET, host.c_str(), &buffer) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), &buffer) == 1;
}

std::string DescribeSocketAddress(const SocketAddress& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.storage.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address.storage);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (address.storage.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address.storage);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

Status ConfigureStreamSocket(int fd, int dead_after_ms) {
  const int one = 1;
  const int idle_s = 1;
  const int interval_s = 1;
  const int count = dead_after_ms / 1000 > 0 ? dead_after_ms / 1000 : 1;
  struct Option {
    int level;
    int name;
    const void* value;
    socklen_t size;
    const char* what;
  } options[] = {
      {IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one), "TCP_NODELAY"},
      {SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one), "SO_KEEPALIVE"},
      {IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s), "TCP_KEEPIDLE"},
      {IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s), "TCP_KEEPINTVL"},
      {IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count), "TCP_KEEPCNT"},
  };
  for (const Option& option : options) {
    if (::setsockopt(fd, option.level, option.name, option.value, option.size) != 0) {
      return ErrnoError(Code::kUnknown, std::string("setsockopt ") + option.what, errno);
    }
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoError(Code::kUnknown, "fcntl O_NONBLOCK", errno);
  }
  return Status::Ok();
}

StatusOr<UniqueFd> ConnectTcp(const std::vector<SocketAddress>& addresses, const Deadline& deadline,
                              std::string* peer) {
  Status last = Error(Code::kNoDevice, "no address to connect to");
  for (const SocketAddress& address : addresses) {
    UniqueFd fd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         IPPROTO_TCP));
    if (!fd.valid()) {
      last = ErrnoError(Code::kNoDevice, "socket", errno);
      continue;
    }
    *peer = DescribeSocketAddress(address);
    if (::connect(fd.get(), address.get(), address.length) != 0 && errno != EINPROGRESS) {
      last = ErrnoError(Code::kNoDevice, "connect to " + *peer, errno);
      continue;
    }
    pollfd p{fd.get(), POLLOUT, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, deadline.PollTimeoutMs());
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      last = Error(Code::kNoDevice, "connect to " + *peer + ": timed out");
      continue;
    }
    int error = 0;
    socklen_t size = sizeof(error);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
    if (error != 0) {
      last = ErrnoError(Code::kNoDevice, "connect to " + *peer, error);
      continue;
    }
    return fd;
  }
  return last;
}

}  // namespace pvgpu::transport::internal
