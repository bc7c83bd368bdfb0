// Child processes for the container tests: run a command and collect its output, or keep one
// running with its stdin held open and read its output line by line.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace pvgpu::containers {

struct Outcome {
  int exit_code = -1;  // 128 + N when signal N ended it
  std::string output;  // stdout and stderr together
};

// Runs argv (PATH lookup) to completion with stdin from /dev/null.
Outcome RunCommand(const std::vector<std::string>& argv);

// A command left running, its stdout and stderr read through one pipe and its stdin a pipe
// that Finish() closes.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // Reads lines until one starts with `prefix` and returns it; "" when output ended first.
  // Everything read is kept for Finish's outcome.
  std::string WaitForLine(const std::string& prefix);
  // Closes stdin, reads the rest of the output and waits for the exit.
  Outcome Finish();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int output_fd_ = -1;
  std::string output_;
  size_t consumed_ = 0;  // output_ up to here has been returned by WaitForLine
};

// The exit status of `podman ...` or any command, as a shell reports it.
int ExitCodeFromWaitStatus(int status);

}  // namespace pvgpu::containers
