// For tests that need something listening on a Unix socket path, as a running host would be.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace pvgpu::tools {

// A socket of `type` bound to `path` and listening; -1 when that fails. The caller closes it.
inline int ListenOnUnixSocket(const std::string& path, int type) {
  const int fd = socket(AF_UNIX, type, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 4) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace pvgpu::tools
