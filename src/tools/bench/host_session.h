// The host a benchmark's channel half talks to: --host, else a reachable PVGPU_HOST, else a
// private pvgpud on the cpu adapter started as `pvgpu run` starts one. Also runs this pvgpu
// again as a child against the same host, for measurements that need a different guest
// environment (PVGPU_PIPELINE=0 is read once, when the guest library creates its client).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/bench/bench.h"
#include "tools/install_layout.h"
#include "tools/private_host.h"

namespace pvgpu::tools::bench {

class HostSession {
 public:
  // Chooses or starts the host (options.host; with options.cpus always a private one, pinned
  // to its CPU) and points this process's PVGPU_HOST at it, so that the guest library, once
  // loaded, connects there.
  static StatusOr<std::unique_ptr<HostSession>> Start(const BenchOptions& options);
  ~HostSession();

  const std::string& address() const { return address_; }
  bool is_private() const { return private_host_ != nullptr; }
  // PREFIX/lib/pvgpu/libcuda.so.1.
  std::string guest_library() const { return layout_.guest_lib_dir + "/libcuda.so.1"; }

  // Runs `pvgpu ARGS...` (this executable) with `extra_env` added and PVGPU_HOST set to this
  // host, and returns what it wrote to stdout. Its stderr passes through. Fails when it exits
  // nonzero.
  StatusOr<std::string> RunSelf(const std::vector<std::string>& args,
                                const std::vector<std::string>& extra_env) const;

  // Stops a private host now (its messages then come before the report). Idempotent.
  void Stop();

 private:
  HostSession() = default;

  InstallLayout layout_;
  std::string address_;
  std::unique_ptr<PrivateHost> private_host_;
};

}  // namespace pvgpu::tools::bench
