// The host a benchmark's channel half talks to: --host, else a reachable PVGPU_HOST, else a
// private pvgpud on the cpu adapter started as `pvgpu run` starts one. Also starts this pvgpu
// again as a child against the same host, for measurements that need a different guest
// environment (PVGPU_PIPELINE=0 is read once, when the guest library creates its client).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "tools/bench/bench.h"
#include "tools/install_layout.h"
#include "tools/private_host.h"

namespace pvgpu::tools::bench {

// A child `pvgpu` that answers one line for each line it is sent (its stdin and stdout are one
// socket to us; its stderr is ours), so that its measurements can take turns with ours.
class SelfChild {
 public:
  SelfChild(pid_t pid, int socket, std::string what)
      : pid_(pid), socket_(socket), what_(std::move(what)) {}
  SelfChild(const SelfChild&) = delete;
  SelfChild& operator=(const SelfChild&) = delete;
  // Kills and reaps the child if Finish() was not called.
  ~SelfChild();

  // Sends `line` (a newline is added) and returns the child's one-line answer, without its
  // newline. Fails when the child ends, or kills it when it has not answered in 5 minutes.
  StatusOr<std::string> Ask(const std::string& line);
  // Ends the child's stdin (its sign to finish) and waits for it; fails unless it exits 0.
  Status Finish();

 private:
  pid_t pid_;
  int socket_;
  std::string what_;      // for errors: "pvgpu bench latency --channel-only"
  std::string buffered_;  // read from the child beyond the last answer
};

class HostSession {
 public:
  // Chooses or starts the host (options.host; with options.cpus always a private one, pinned
  // to its CPU) and points this process's PVGPU_HOST at it, so that the guest library, once
  // loaded, connects there.
  static StatusOr<std::unique_ptr<HostSession>> Start(const BenchOptions& options);
  // Always a private pvgpud, started with `daemon_args` added (bench contention: --config).
  static StatusOr<std::unique_ptr<HostSession>> StartPrivate(
      const BenchOptions& options, const std::vector<std::string>& daemon_args);
  ~HostSession();

  const std::string& address() const { return address_; }
  bool is_private() const { return private_host_ != nullptr; }
  // PREFIX/lib/pvgpu/libcuda.so.1.
  std::string guest_library() const { return layout_.guest_lib_dir + "/libcuda.so.1"; }
  const InstallLayout& layout() const { return layout_; }

  // Starts `pvgpu ARGS...` (this executable) with `extra_env` added and PVGPU_HOST set to this
  // host (or the PVGPU_HOST=... that `extra_env` names), talking to us through its stdin and
  // stdout (SelfChild).
  StatusOr<std::unique_ptr<SelfChild>> StartSelf(const std::vector<std::string>& args,
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
