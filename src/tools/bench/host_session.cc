#include "tools/bench/host_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tools/child_process.h"
#include "tools/console.h"
#include "tools/host_address.h"
#include "tools/signal_forwarder.h"

extern char** environ;

namespace pvgpu::tools::bench {
namespace {

// How long SelfChild::Ask waits for an answer.
constexpr int kAnswerTimeoutMs = 300 * 1000;

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

StatusOr<std::unique_ptr<HostSession>> HostSession::StartPrivate(
    const BenchOptions& options, const std::vector<std::string>& daemon_args) {
  std::unique_ptr<HostSession> session(new HostSession());
  PVGPU_ASSIGN_OR_RETURN(session->layout_, FindInstallLayout());
  if (access(session->guest_library().c_str(), R_OK) != 0) {
    return Error(Code::kNotFound,
                 "no guest library at " + session->guest_library() + " (set PVGPU_PREFIX?)");
  }
  PrivateHost::Options host_options;
  host_options.daemon_path = session->layout_.daemon;
  host_options.extra_args = daemon_args;
  if (options.cpus) host_options.cpu = options.cpus->host;
  PVGPU_ASSIGN_OR_RETURN(session->private_host_, PrivateHost::Start(host_options));
  session->address_ = session->private_host_->address();
  setenv("PVGPU_HOST", session->address_.c_str(), 1);
  return session;
}

HostSession::~HostSession() { Stop(); }

void HostSession::Stop() {
  if (private_host_) private_host_->Stop();
}

StatusOr<std::unique_ptr<SelfChild>> HostSession::StartSelf(
    const std::vector<std::string>& args, const std::vector<std::string>& extra_env) const {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "PVGPU_HOST=", 11) == 0) continue;
    env.emplace_back(*entry);
  }
  const bool named = std::any_of(extra_env.begin(), extra_env.end(), [](const std::string& e) {
    return e.rfind("PVGPU_HOST=", 0) == 0;
  });
  if (!named) env.push_back("PVGPU_HOST=" + address_);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> argv = {"/proc/self/exe"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string what = "pvgpu";
  for (const std::string& arg : args) what += " " + arg;

  // One socket pair is the child's stdin and stdout: a socket, unlike a pipe, can be written
  // without SIGPIPE (MSG_NOSIGNAL) if the child has died. Both ends live above fds 0-2, so
  // that the child's dup2() calls cannot clobber its end even if pvgpu started with those
  // closed.
  int ends[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return Error(Code::kUnknown, std::string("socketpair: ") + std::strerror(errno));
  }
  ends[0] = MoveAboveStandardStreams(ends[0]);
  ends[1] = MoveAboveStandardStreams(ends[1]);
  auto close_all = [&] {
    for (int fd : ends) {
      if (fd >= 0) close(fd);
    }
  };
  if (ends[0] < 0 || ends[1] < 0) {
    const int error = errno;
    close_all();
    return Error(Code::kUnknown, std::string("fcntl: ") + std::strerror(error));
  }
  // Everything the child needs is built before fork(); after it only async-signal-safe calls.
  std::vector<char*> c_argv, c_env;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  for (std::string& entry : env) c_env.push_back(entry.data());
  c_env.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close_all();
    return Error(Code::kUnknown, std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    ResetSignalMaskInChild();
    dup2(ends[1], STDIN_FILENO);  // dup2 clears close-on-exec on the copies
    dup2(ends[1], STDOUT_FILENO);
    execve(c_argv[0], c_argv.data(), c_env.data());
    _exit(127);
  }
  close(ends[1]);
  return std::make_unique<SelfChild>(pid, ends[0], std::move(what));
}

SelfChild::~SelfChild() {
  if (pid_ < 0) return;
  kill(pid_, SIGKILL);
  (void)Finish();
}

StatusOr<std::string> SelfChild::Ask(const std::string& line) {
  if (pid_ < 0) return Error(Code::kUnknown, what_ + " has already finished");
  const std::string out = line + "\n";
  for (size_t sent = 0; sent < out.size();) {
    const ssize_t n = send(socket_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error(Code::kUnknown, what_ + " stopped listening: " + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string answer = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return answer;
    }
    // A round takes milliseconds; a child silent for minutes is stuck, and is stopped.
    pollfd readable{socket_, POLLIN, 0};
    const int ready = poll(&readable, 1, kAnswerTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      kill(pid_, SIGKILL);
      return Error(Code::kUnknown, what_ + " did not answer '" + line + "' within " +
                                       std::to_string(kAnswerTimeoutMs / 1000) + " s");
    }
    char buffer[256];
    const ssize_t got = read(socket_, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Error(Code::kUnknown, what_ + " ended without answering '" + line + "'");
    buffered_.append(buffer, static_cast<size_t>(got));
  }
}

Status SelfChild::Finish() {
  if (pid_ < 0) return Status::Ok();
  // End of its stdin is the child's sign to finish; whatever else it prints is drained so
  // that it never blocks on a full socket.
  shutdown(socket_, SHUT_WR);
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(socket_, buffer, sizeof(buffer));
    if (got > 0 || (got < 0 && errno == EINTR)) continue;
    break;
  }
  close(socket_);
  socket_ = -1;
  const int code = WaitForExitCode(pid_);
  pid_ = -1;
  if (code != 0) {
    return Error(Code::kUnknown, what_ + " exited with status " + std::to_string(code));
  }
  return Status::Ok();
}

}  // namespace pvgpu::tools::bench
