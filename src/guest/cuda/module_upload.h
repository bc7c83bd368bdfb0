// Sending a module image to the host, whatever its size. An image that fits in one channel
// message travels in its ModuleLoad; a larger one (CuPy's CUB kernels are 9 MB, cuRAND's 29 MB,
// and a channel message carries 4 MiB by default) is staged on the host in chunks first
// (host/session_upload.cc), the same way over every channel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "guest/client/client.h"
#include "protocol/wire.h"

namespace pvgpu::guest {

// Loads `image` as `request` describes and returns the host's result; the reply's payload
// (the module's description and JIT logs) lands in *description.
Code SendModuleImage(Client& client, const protocol::ModuleLoadRequest& request,
                     std::span<const uint8_t> image, std::vector<uint8_t>* description);

}  // namespace pvgpu::guest
