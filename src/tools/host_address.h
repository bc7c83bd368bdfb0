// Host addresses as users write them (--host, PVGPU_HOST) and the checks `pvgpu run` makes on
// them before handing them to the guest library, which does the real connecting.
#pragma once

#include <string>

#include "common/status.h"

namespace pvgpu::tools {

struct HostAddress {
  enum class Kind { kUnix, kTcp, kTls };
  Kind kind = Kind::kUnix;
  // kUnix: the socket's filesystem path. kTcp/kTls: "host:port" as written.
  std::string target;
  // The text the user gave, passed on unchanged so the guest library sees exactly what the
  // user wrote (it accepts the same forms).
  std::string original;
};

// Accepts "unix:PATH", "unix://PATH", a bare filesystem path, "tcp://HOST:PORT" and
// "tls://HOST:PORT". Anything else is an error whose message lists the accepted forms.
StatusOr<HostAddress> ParseHostAddress(const std::string& text);

// For unix sockets: true when connect() succeeds now. Network addresses are not probed (a
// probe could block on an unreachable network and would open a TLS session for nothing), so
// they always count as reachable and any failure surfaces from the program's CUDA calls.
bool IsReachable(const HostAddress& address);

// Longest path that fits in sockaddr_un::sun_path with its terminating NUL.
size_t MaxUnixSocketPathLength();

}  // namespace pvgpu::tools
