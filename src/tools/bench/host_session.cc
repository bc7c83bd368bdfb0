#include "tools/bench/host_session.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tools/child_process.h"
#include "tools/console.h"
#include "tools/host_address.h"

extern char** environ;

namespace pvgpu::tools::bench {
namespace {

// The explicit host, or PVGPU_HOST when it answers now; "" means a private host is needed.
StatusOr<std::string> ExistingHost(const std::optional<std::string>& host) {
  if (host) {
    PVGPU_ASSIGN_OR_RETURN(HostAddress address, ParseHostAddress(*host));
    (void)address;
    return *host;
  }
  const char* env = std::getenv("PVGPU_HOST");
  if (env == nullptr || *env == '\0') return std::string();
  StatusOr<HostAddress> address = ParseHostAddress(env);
  if (!address.ok() || !IsReachable(*address)) {
    PrintWarning(std::string("PVGPU_HOST=") + env + " is not usable; starting a private host");
    return std::string();
  }
  return std::string(env);
}

}  // namespace

StatusOr<std::unique_ptr<HostSession>> HostSession::Start(const BenchOptions& options) {
  std::unique_ptr<HostSession> session(new HostSession());
  PVGPU_ASSIGN_OR_RETURN(session->layout_, FindInstallLayout());
  if (access(session->guest_library().c_str(), R_OK) != 0) {
    return Error(Code::kNotFound,
                 "no guest library at " + session->guest_library() + " (set PVGPU_PREFIX?)");
  }
  if (options.cpus && options.host) {
    return Error(Code::kInvalidValue,
                 "--cpus pins a private pvgpud to its CPU; it cannot be combined with --host");
  }
  if (!options.cpus) {
    PVGPU_ASSIGN_OR_RETURN(session->address_, ExistingHost(options.host));
  }
  if (session->address_.empty()) {
    PrivateHost::Options host_options;
    host_options.daemon_path = session->layout_.daemon;
    if (options.cpus) host_options.cpu = options.cpus->host;
    PVGPU_ASSIGN_OR_RETURN(session->private_host_, PrivateHost::Start(host_options));
    session->address_ = session->private_host_->address();
  }
  setenv("PVGPU_HOST", session->address_.c_str(), 1);
  return session;
}

HostSession::~HostSession() { Stop(); }

void HostSession::Stop() {
  if (private_host_) private_host_->Stop();
}

StatusOr<std::string> HostSession::RunSelf(const std::vector<std::string>& args,
                                           const std::vector<std::string>& extra_env) const {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "PVGPU_HOST=", 11) == 0) continue;
    env.emplace_back(*entry);
  }
  env.push_back("PVGPU_HOST=" + address_);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> argv = {"/proc/self/exe"};
  argv.insert(argv.end(), args.begin(), args.end());

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Error(Code::kUnknown, std::string("pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is built before fork(); after it only async-signal-safe calls.
  std::vector<char*> c_argv, c_env;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  for (std::string& entry : env) c_env.push_back(entry.data());
  c_env.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return Error(Code::kUnknown, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copy
    execve(c_argv[0], c_argv.data(), c_env.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string output;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(pipe_fds[0], buffer, sizeof(buffer));
    if (got > 0) {
      output.append(buffer, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  const int code = WaitForExitCode(pid);
  if (code != 0) {
    return Error(Code::kUnknown, "pvgpu bench child (" + args.front() + ") exited with status " +
                                     std::to_string(code));
  }
  return output;
}

}  // namespace pvgpu::tools::bench
