// Which hosts a guest process talks to. PVGPU_HOST is a comma-separated list of addresses;
// an entry "dir:PATH" stands for every socket in PATH, in natural name order (gpu-2.sock
// before gpu-10.sock). Without PVGPU_HOST: the default socket when it exists, else the sockets
// in /run/pvgpu/devices when there are any (a container given pvgpu CDI devices), else the
// default socket (which then reports no device).
//
// The directory form exists for containers: each CDI device mounts its own socket into one
// directory, so a container given several devices needs no per-device environment variable
// (CDI cannot merge conflicting values of one variable from several devices).
#pragma once

#include <string>
#include <vector>

namespace pvgpu::guest {

// Where `pvgpu cdi generate` mounts device sockets inside containers, unless told otherwise.
inline constexpr char kContainerDeviceDir[] = "/run/pvgpu/devices";

// The addresses named by `value` (PVGPU_HOST; null or empty: the default described above).
std::vector<std::string> ExpandHostList(const char* value, const std::string& default_address,
                                        const std::string& device_dir = kContainerDeviceDir);

// "unix:DIR/NAME" for every socket in `dir`, in natural name order; empty when there are none
// or the directory cannot be read.
std::vector<std::string> SocketsInDirectory(const std::string& dir);

// Compares names with runs of digits taken as numbers: "gpu-2" < "gpu-10".
bool NaturalLess(const std::string& a, const std::string& b);

}  // namespace pvgpu::guest
