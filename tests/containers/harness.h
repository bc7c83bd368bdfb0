// The world the container tests run in: a real pvgpud with per-device sockets, the CDI spec
// `pvgpu cdi generate` writes for it, a root filesystem assembled from this machine's files,
// and podman with the flags this machine needs (DEVELOPERS.md).
#pragma once

#include <string>
#include <vector>

#include "process.h"

namespace pvgpu::containers {

// Why podman cannot run containers here, or "" when it can. Checked once, before any test.
std::string PodmanUnavailableReason(const std::string& rootfs);

// `podman run` of `command` in `rootfs` with `extra` options (e.g. --device, -e, -i).
std::vector<std::string> PodmanRun(const std::string& rootfs,
                                   const std::vector<std::string>& extra,
                                   const std::vector<std::string>& command);

// A pvgpud started with `args` (plus --ready-fd and a log file in `dir`), stopped by the
// destructor.
class Daemon {
 public:
  Daemon(const std::string& binary, const std::string& dir, std::vector<std::string> args);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Empty when the daemon said "ready"; else why not (with its log).
  const std::string& error() const { return error_; }

 private:
  pid_t pid_ = -1;
  std::string error_;
};

// The lines of `text`.
std::vector<std::string> Lines(const std::string& text);
// The first line starting with `prefix`, or "".
std::string LineStartingWith(const std::string& text, const std::string& prefix);
// The file's contents, "" when it cannot be read.
std::string ReadFile(const std::string& path);

}  // namespace pvgpu::containers
