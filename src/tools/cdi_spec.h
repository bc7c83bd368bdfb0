// The Container Device Interface spec for a running host: one device per adapter (named by its
// index and again by its UUID) plus "all". A device's edits mount the socket of the host's
// non-admin listener that serves exactly that adapter set; the spec-wide edits mount the guest
// libraries where the container's dynamic loader looks by default and point PVGPU_HOST at the
// directory of device sockets.
//
// Why a directory of sockets: a container may be given several devices, and CDI applies every
// device's edits; two devices setting PVGPU_HOST to different values would conflict, but two
// sockets in one directory do not. The guest library reads every socket there in natural order
// (guest/client/host_list.h), so "--device pvgpu.dev/gpu=0 --device pvgpu.dev/gpu=1" gives the
// container devices 0 and 1, each through its own listener and quota.
//
// What a container may use is decided by the host (the listener's adapters and quota). The spec
// only hands out sockets; editing the container's environment reaches nothing more.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace pvgpu::tools {

// The version written: 0.5.0 is the first to allow device names that start with a digit
// ("0"), and the newest that Debian 12's podman 4.3 accepts (it refuses 0.6.0 specs).
inline constexpr char kCdiVersion[] = "0.5.0";
inline constexpr char kCdiKind[] = "pvgpu.dev/gpu";

struct CdiOptions {
  std::string kind = kCdiKind;
  // Where device sockets appear inside the container.
  std::string device_root = "/run/pvgpu/devices";
  // Host paths of the guest libraries to mount (libcuda.so.1, libnvidia-ml.so.1).
  std::vector<std::string> libraries;
};

struct CdiSpec {
  nlohmann::json spec;
  // Adapters left out (no listener serves exactly them), for the user to read.
  std::vector<std::string> warnings;
};

// Builds the spec from a HostStatus document (status.cc) as an admin session sees it.
StatusOr<CdiSpec> BuildCdiSpec(const nlohmann::json& host_status, const CdiOptions& options);

// Checks what the CDI schema requires of a spec: cdiVersion, a "vendor/class" kind, a
// non-empty list of uniquely and validly named devices each with containerEdits, and edits of
// the right shapes (env "KEY=VALUE", mounts with absolute hostPath and containerPath, device
// nodes with a path, hooks with hookName and path). Unknown keys are errors, as in CDI's
// own loader.
Status ValidateCdiSpec(const nlohmann::json& spec);

// The directories where the container's dynamic loader finds libraries without
// LD_LIBRARY_PATH or ld.so.cache: Debian/Ubuntu's multiarch directory and Fedora's lib64.
std::vector<std::string> ContainerLibraryDirs();

}  // namespace pvgpu::tools
