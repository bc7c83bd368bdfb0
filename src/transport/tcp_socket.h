// Addresses and sockets of the remote channel: "tcp://HOST:PORT" and "tls://HOST:PORT"
// (IPv6 literals in brackets, "tls://[::1]:7070"), name resolution, the loopback rule for
// plain tcp://, and the socket options that make a dead peer or network show up quickly.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/fd_util.h"

namespace pvgpu::transport::internal {

struct RemoteAddress {
  bool tls = false;
  std::string host;  // as written, without brackets
  uint16_t port = 0;
  // "tls://host:port" (brackets around IPv6 literals).
  std::string ToString() const;
};

// Parses a remote address; kInvalidValue with the reason when malformed.
StatusOr<RemoteAddress> ParseRemoteAddress(const std::string& address);

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// Resolves host and port (numeric addresses without DNS). `passive` for listeners.
StatusOr<std::vector<SocketAddress>> Resolve(const RemoteAddress& address, bool passive);

// 127.0.0.0/8, ::1 and IPv4-mapped 127.x addresses.
bool IsLoopback(const SocketAddress& address);
// True when `host` is an IPv4 or IPv6 literal (the TLS peer check then matches an IP SAN).
bool IsIpLiteral(const std::string& host);
// "10.0.0.2:41234" / "[::1]:41234" for logs.
std::string DescribeSocketAddress(const SocketAddress& address);

// TCP_NODELAY (each message leaves at once; the endpoint batches by itself) and keepalive
// probes every second (dead_after_ms / 1 s of them), so the kernel also gives up on an idle
// peer that stopped answering. No TCP_USER_TIMEOUT: since Linux 5.x it also aborts a connection
// whose peer keeps a zero window that long, i.e. a busy host that applies backpressure, which
// the endpoint's heartbeats already tell apart from a dead one. Socket buffers are left to the
// kernel's autotuning: setting SO_SNDBUF or SO_RCVBUF disables it and caps the buffer at
// net.core.[rw]mem_max, which is smaller than what autotuning reaches (tcp_wmem/tcp_rmem) on a fast
// link.
Status ConfigureStreamSocket(int fd, int dead_after_ms);

// Non-blocking connect to the first address that answers before `deadline`.
StatusOr<UniqueFd> ConnectTcp(const std::vector<SocketAddress>& addresses, const Deadline& deadline,
                              std::string* peer);

}  // namespace pvgpu::transport::internal
