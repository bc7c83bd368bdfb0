#include "tools/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "tools/signal_forwarder.h"

namespace pvgpu::tools {
namespace {

std::vector<char*> ToCStrings(const std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (const std::string& s : strings) result.push_back(const_cast<char*>(s.c_str()));
  result.push_back(nullptr);
  return result;
}

}  // namespace

int MoveAboveStandardStreams(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

SpawnResult SpawnCommand(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env) {
  SpawnResult result;
  if (argv.empty()) {
    result.exec_errno = ENOENT;
    return result;
  }
  // Built before fork(): the child may only make async-signal-safe calls.
  std::vector<char*> c_argv = ToCStrings(argv);
  std::vector<char*> c_env = ToCStrings(env);

  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) {
    result.exec_errno = errno;
    return result;
  }
  error_pipe[0] = MoveAboveStandardStreams(error_pipe[0]);
  error_pipe[1] = MoveAboveStandardStreams(error_pipe[1]);

  pid_t pid = fork();
  if (pid < 0) {
    result.exec_errno = errno;
    close(error_pipe[0]);
    close(error_pipe[1]);
    return result;
  }
  if (pid == 0) {
    close(error_pipe[0]);
    ResetSignalMaskInChild();
    execvpe(c_argv[0], c_argv.data(), c_env.data());
    int exec_errno = errno;
    ssize_t ignored = write(error_pipe[1], &exec_errno, sizeof(exec_errno));
    (void)ignored;
    _exit(127);
  }
  close(error_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(error_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (got < 0 && errno == EINTR);
  close(error_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    WaitForExitCode(pid);
    result.exec_errno = exec_errno != 0 ? exec_errno : ENOEXEC;
    return result;
  }
  result.pid = pid;
  return result;
}

int ExitCodeFromWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int WaitForExitCode(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return ExitCodeFromWaitStatus(status);
}

int ExitCodeForExecError(int exec_errno) {
  return exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
}

}  // namespace pvgpu::tools
