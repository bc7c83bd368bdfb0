// Where the host's socket lives unless told otherwise; shared by pvgpud, the guest libraries
// and the pvgpu tool so that they agree.
#pragma once

#include <string>

namespace pvgpu {

// root: /run/pvgpu/pvgpud.sock; otherwise $XDG_RUNTIME_DIR/pvgpu/pvgpud.sock, or
// /tmp/pvgpu-UID/pvgpud.sock when XDG_RUNTIME_DIR is unset.
std::string DefaultSocketPath();

// The host address a guest uses: PVGPU_HOST if set and non-empty, else "unix:" + the default.
std::string GuestHostAddress();

// Strips "unix:" from a local address; returns false when `address` is not a local one.
bool LocalSocketPath(const std::string& address, std::string* path);

}  // namespace pvgpu
