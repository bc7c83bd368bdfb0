// Starting the user's program and turning its end into an exit status, with shell semantics
// so that `pvgpu run -- CMD` can stand in for `CMD` in scripts.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace pvgpu::tools {

struct SpawnResult {
  pid_t pid = -1;      // Valid when exec_errno == 0.
  int exec_errno = 0;  // Why exec failed; the child has already been reaped.
};

// fork + execvpe: PATH lookup as a shell does it, `env` as the whole environment. An exec
// failure is reported back through a close-on-exec pipe, so "command not found" is known
// for certain instead of guessed from exit status 127.
SpawnResult SpawnCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// Waits for `pid` and returns its exit status, or 128 + N when signal N killed it.
int WaitForExitCode(pid_t pid);

// The exit status a shell gives for an exec failure: 127 when the file is missing, else 126.
int ExitCodeForExecError(int exec_errno);

// Converts a waitpid() status as WaitForExitCode does.
int ExitCodeFromWaitStatus(int status);

// `fd` moved to a descriptor number >= 3 with close-on-exec set, so a child can later dup2()
// its standard streams without clobbering it even if pvgpu started with 0-2 closed.
int MoveAboveStandardStreams(int fd);

}  // namespace pvgpu::tools
