#include "common/paths.h"

#include <unistd.h>

#include <cstdlib>

namespace pvgpu {

std::string DefaultSocketPath() {
  if (geteuid() == 0) return "/run/pvgpu/pvgpud.sock";
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime) {
    return std::string(runtime) + "/pvgpu/pvgpud.sock";
  }
  return "/tmp/pvgpu-" + std::to_string(geteuid()) + "/pvgpud.sock";
}

std::string GuestHostAddress() {
  if (const char* host = std::getenv("PVGPU_HOST"); host != nullptr && *host) return host;
  return "unix:" + DefaultSocketPath();
}

bool LocalSocketPath(const std::string& address, std::string* path) {
  if (address.rfind("unix:", 0) == 0) {
    *path = address.substr(5);
    return !path->empty();
  }
  if (!address.empty() && address[0] == '/') {
    *path = address;
    return true;
  }
  return false;
}

}  // namespace pvgpu
