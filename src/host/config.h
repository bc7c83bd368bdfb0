// pvgpud's configuration file and the --device-sockets convenience: which listeners the host
// opens and what each grants. A listener's policy (its adapters, its per-session memory quota)
// is the only thing that decides what a guest on it may use, so a container's access is fixed
// by the socket it was given, whatever its environment says.
//
// The file is JSON:
//   {
//     "adapters": "cpu,cpu",
//     "listeners": [
//       {"address": "unix:/run/pvgpu/pvgpud.sock", "admin": true},
//       {"address": "unix:/run/pvgpu/devices/gpu-0.sock", "adapters": [0],
//        "memory_quota": "512M", "mode": "0660", "limits": {"streams": 256, "events": 4096},
//        "compute_share": 3, "priority": "normal"}
//     ]
//   }
// "compute_share" is each session's weight when sessions compete for an adapter, "priority"
// ("high" or "normal") whether its work goes ahead of normal sessions' (docs/sharing.md).
// "limits" caps the objects of each kind a session may hold (host/session_limits.h); kinds it
// does not name keep their defaults. Unknown keys are errors, so that a misspelt
// "memory_qouta" cannot silently grant everything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "host/server.h"

namespace pvgpu::host {

struct HostConfig {
  std::string adapters;  // an --adapters spec; empty: the file does not say
  std::vector<ListenerConfig> listeners;
};

// Parses the file's text; `origin` names it in error messages.
StatusOr<HostConfig> ParseHostConfig(const std::string& text, const std::string& origin);
// Reads and parses a file.
StatusOr<HostConfig> LoadHostConfig(const std::string& path);

// The largest compute_share accepted.
inline constexpr uint32_t kMaxComputeShare = 1000000;

// "high" or "normal" -> *high.
bool ParsePriority(const std::string& text, bool* high);

// --compute-share SPEC for the --device-sockets listeners: "N" gives each of them weight N;
// "gpu-0=3,all=1" sets the named sockets' weights (the others keep theirs).
Status ApplyComputeShares(const std::string& spec, std::vector<ListenerConfig>* device_sockets);

// "0660" -> 0660. Accepts 3 or 4 octal digits no wider than 0777.
bool ParseSocketMode(const std::string& text, int* mode);

// The listeners of --device-sockets DIR: DIR/gpu-<i>.sock for each of `adapter_count` adapters
// and DIR/all.sock for all of them, none admin, each with `quota` per session.
std::vector<ListenerConfig> DeviceSocketListeners(const std::string& dir, size_t adapter_count,
                                                  uint64_t quota, int mode);

// Checks every listener's adapter indices against the host's adapter count, so that a bad
// file is refused before any socket is created.
Status ValidateListeners(const std::vector<ListenerConfig>& listeners, size_t adapter_count,
                         const std::string& origin);

// Creates the directory that will hold a listener's socket (and its parents, mode 0755) when
// it is missing, so that --device-sockets /run/pvgpu/devices works on a fresh boot.
Status EnsureSocketDirectory(const std::string& address);

}  // namespace pvgpu::host
