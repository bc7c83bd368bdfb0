// A pvgpud started for one `pvgpu run` and stopped when the program ends, so that
// `pvgpu run -- CMD` works with no host set up beforehand.
//
// Ready contract with pvgpud: pvgpu passes `--ready-fd N`, where N is the write end of a pipe
// that the daemon inherits. Once the daemon listens on its socket it writes the single line
// "ready\n" to N and closes it. Anything else (end of file first, other text, no answer within
// the timeout) means the start failed, and the daemon's logs are kept for the user.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace pvgpu::tools {

class PrivateHost {
 public:
  struct Options {
    std::string daemon_path;  // PREFIX/bin/pvgpud
    std::string adapters = "cpu";
    std::vector<std::string> extra_args;  // more pvgpud arguments (bench contention: --config)
    bool keep_logs = false;
    std::chrono::milliseconds ready_timeout{10000};
    std::chrono::milliseconds stop_timeout{5000};
    // When set, the daemon and every thread it starts run only on this CPU (benchmarks).
    std::optional<int> cpu;
    // Polled while waiting for "ready": a nonzero signal number abandons the start.
    std::function<int()> interrupted;
  };

  // Creates the private directory, starts the daemon and waits until it is ready. On failure
  // the daemon is gone and the message says where its logs are.
  static StatusOr<std::unique_ptr<PrivateHost>> Start(const Options& options);

  ~PrivateHost();
  PrivateHost(const PrivateHost&) = delete;
  PrivateHost& operator=(const PrivateHost&) = delete;

  // "unix:DIR/pvgpud.sock", the value for PVGPU_HOST.
  const std::string& address() const { return address_; }
  const std::string& directory() const { return directory_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then SIGKILL after the stop timeout. Removes the directory unless logs are to be
  // kept or the daemon ended abnormally; then prints where they are. Idempotent.
  void Stop();

 private:
  PrivateHost(Options options, std::string directory);
  Status Launch();
  Status WaitUntilReady(int ready_fd);
  // Kills the daemon at once (start-up failures) and keeps the directory.
  void Abandon();
  std::string LogTail() const;

  Options options_;
  std::string directory_;
  std::string address_;
  pid_t pid_ = -1;
  bool stopped_ = false;
};

}  // namespace pvgpu::tools
