#include "process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace pvgpu::containers {

namespace {

// Forks argv with stdin from `stdin_fd` and stdout+stderr into `output_fd`.
pid_t Spawn(const std::vector<std::string>& argv, int stdin_fd, int output_fd) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(stdin_fd, 0);
    dup2(output_fd, 1);
    dup2(output_fd, 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

void ReadAll(int fd, std::string* out) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out->append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return;
    }
  }
}

int Wait(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ExitCodeFromWaitStatus(status);
}

}  // namespace

int ExitCodeFromWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

Outcome RunCommand(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = Spawn(argv, null_fd, pipe_fds[1]);
  close(null_fd);
  close(pipe_fds[1]);
  Outcome outcome;
  ReadAll(pipe_fds[0], &outcome.output);
  close(pipe_fds[0]);
  outcome.exit_code = Wait(pid);
  return outcome;
}

Background::Background(const std::vector<std::string>& argv) {
  int input[2], output[2];
  if (pipe2(input, O_CLOEXEC) != 0 || pipe2(output, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_ = Spawn(argv, input[0], output[1]);
  close(input[0]);
  close(output[1]);
  stdin_fd_ = input[1];
  output_fd_ = output[0];
}

Background::~Background() {
  if (pid_ > 0) Finish();
}

std::string Background::WaitForLine(const std::string& prefix) {
  for (;;) {
    size_t end;
    while ((end = output_.find('\n', consumed_)) != std::string::npos) {
      std::string line = output_.substr(consumed_, end - consumed_);
      consumed_ = end + 1;
      if (line.rfind(prefix, 0) == 0) return line;
    }
    char buffer[4096];
    const ssize_t n = read(output_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      output_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return "";
    }
  }
}

Outcome Background::Finish() {
  Outcome outcome;
  if (pid_ <= 0) return outcome;
  close(stdin_fd_);
  ReadAll(output_fd_, &output_);
  close(output_fd_);
  outcome.exit_code = Wait(pid_);
  outcome.output = output_;
  pid_ = -1;
  return outcome;
}

}  // namespace pvgpu::containers
