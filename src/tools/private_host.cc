#include "tools/private_host.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/log.h"
#include "tools/child_process.h"
#include "tools/console.h"
#include "tools/host_address.h"
#include "tools/signal_forwarder.h"

namespace pvgpu::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kSocketName[] = "pvgpud.sock";
constexpr char kLogName[] = "pvgpud.log";
// The daemon's stdout and stderr: where it complains before its own log file is open.
constexpr char kOutputName[] = "pvgpud.output";
constexpr int kTailLines = 20;

std::string ErrnoText(int err) { return std::strerror(err); }

// A fresh 0700 directory (mkdtemp) for the socket and logs. The runtime directory comes first
// because it is per user and cleaned at logout; candidates whose socket path would not fit in
// sockaddr_un are skipped rather than failing later at bind().
StatusOr<std::string> CreatePrivateDirectory() {
  std::vector<std::string> bases;
  for (const char* name : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] == '/') bases.emplace_back(value);
  }
  bases.emplace_back("/tmp");
  std::string failures;
  for (std::string base : bases) {
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    std::string pattern = base + "/pvgpu-run.XXXXXX";
    if (pattern.size() + 1 + std::strlen(kSocketName) > MaxUnixSocketPathLength()) {
      failures += "\n  " + base + ": path too long for a unix socket";
      continue;
    }
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) return std::string(buffer.data());
    failures += "\n  " + base + ": " + ErrnoText(errno);
  }
  return Error(Code::kNotPermitted, "cannot create a private directory for pvgpud:" + failures);
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int signo = WTERMSIG(status);
    return "was killed by signal " + std::to_string(signo) + " (" + strsignal(signo) + ")";
  }
  return "stopped unexpectedly";
}

// Waits up to `timeout` for `pid` to end; true and `status` filled when it did.
bool WaitWithTimeout(pid_t pid, std::chrono::milliseconds timeout, int* status) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // Not our child any more: nothing to wait for.
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void KillGroupAndProcess(pid_t pid, int signo) {
  // The daemon leads its own process group; signalling the group also reaches any helper it
  // forked. The direct kill covers the moment before setpgid() took effect.
  kill(-pid, signo);
  kill(pid, signo);
}

std::deque<std::string> LastLines(const std::string& path, int count) {
  std::deque<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > count) lines.pop_front();
  }
  return lines;
}

}  // namespace

PrivateHost::PrivateHost(Options options, std::string directory)
    : options_(std::move(options)),
      directory_(std::move(directory)),
      address_("unix:" + directory_ + "/" + kSocketName) {}

PrivateHost::~PrivateHost() { Stop(); }

StatusOr<std::unique_ptr<PrivateHost>> PrivateHost::Start(const Options& options) {
  PVGPU_ASSIGN_OR_RETURN(std::string directory, CreatePrivateDirectory());
  std::unique_ptr<PrivateHost> host(new PrivateHost(options, directory));
  Status status = host->Launch();
  if (status.ok()) return host;

  bool interrupted = options.interrupted && options.interrupted() != 0;
  std::string tail = interrupted ? "" : host->LogTail();
  host->Abandon();
  // Keep the directory only when the daemon left something to read; an empty one (say,
  // pvgpud is missing) would just litter the runtime directory.
  if (interrupted || tail.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
    return status;
  }
  return Error(status.code(),
               status.message() + tail + "\nThe private host's files are kept in " + directory);
}

Status PrivateHost::Launch() {
  std::string socket_path = directory_ + "/" + kSocketName;
  std::string log_path = directory_ + "/" + kLogName;
  std::string output_path = directory_ + "/" + kOutputName;
  if (access(options_.daemon_path.c_str(), X_OK) != 0) {
    return Error(Code::kFileNotFound,
                 "cannot start a private host: " + options_.daemon_path + ": " + ErrnoText(errno) +
                     " (is pvgpu installed completely? --host ADDR uses a running host instead)");
  }

  int output_fd = MoveAboveStandardStreams(
      open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  int null_fd = MoveAboveStandardStreams(open("/dev/null", O_RDONLY | O_CLOEXEC));
  int ready_pipe[2] = {-1, -1};
  if (output_fd < 0 || null_fd < 0 || pipe2(ready_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    if (output_fd >= 0) close(output_fd);
    if (null_fd >= 0) close(null_fd);
    return Error(Code::kUnknown, "cannot prepare the private host's files: " + ErrnoText(err));
  }
  int ready_read = MoveAboveStandardStreams(ready_pipe[0]);
  int ready_write = MoveAboveStandardStreams(ready_pipe[1]);

  // Everything the child needs is built before fork(); the child then makes only
  // async-signal-safe calls.
  std::vector<std::string> args = {options_.daemon_path,
                                   "--listen",
                                   "unix:" + socket_path,
                                   "--adapters",
                                   options_.adapters,
                                   "--ready-fd",
                                   std::to_string(ready_write),
                                   "--log-file",
                                   log_path};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  static constexpr char kExecFailed[] = "pvgpu: cannot execute pvgpud\n";
  static constexpr char kPinFailed[] = "pvgpu: cannot pin pvgpud to its CPU\n";
  cpu_set_t pin;
  CPU_ZERO(&pin);
  if (options_.cpu) CPU_SET(*options_.cpu, &pin);
  pid_t parent = getpid();

  pid_t pid = fork();
  if (pid == 0) {
    // Its own process group keeps the terminal's Ctrl-C away from the daemon: pvgpu stops it
    // after the program has finished, so the program can still use it while handling SIGINT.
    setpgid(0, 0);
    // If pvgpu dies without stopping it (SIGKILL, crash), the daemon must not linger.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // pvgpu died before prctl() took effect.
    ResetSignalMaskInChild();
    dup2(null_fd, STDIN_FILENO);
    dup2(output_fd, STDOUT_FILENO);
    dup2(output_fd, STDERR_FILENO);
    // The one descriptor the daemon is meant to inherit.
    fcntl(ready_write, F_SETFD, 0);
    // Before exec, so that every thread of the daemon inherits it.
    if (options_.cpu && sched_setaffinity(0, sizeof(pin), &pin) != 0) {
      ssize_t ignored = write(STDERR_FILENO, kPinFailed, sizeof(kPinFailed) - 1);
      (void)ignored;
      _exit(126);
    }
    execv(argv[0], argv.data());
    ssize_t ignored = write(STDERR_FILENO, kExecFailed, sizeof(kExecFailed) - 1);
    (void)ignored;
    _exit(127);
  }
  int fork_errno = errno;
  close(output_fd);
  close(null_fd);
  close(ready_write);  // Otherwise the daemon's exit would never show as end of file.
  if (pid < 0) {
    close(ready_read);
    return Error(Code::kUnknown, "cannot start pvgpud: fork: " + ErrnoText(fork_errno));
  }
  setpgid(pid, pid);  // Both sides call it, so the group exists whichever runs first.
  pid_ = pid;
  PVGPU_DEBUG("started private pvgpud pid " << pid << " in " << directory_);
  Status status = WaitUntilReady(ready_read);
  close(ready_read);
  return status;
}

Status PrivateHost::WaitUntilReady(int ready_fd) {
  auto deadline = Clock::now() + options_.ready_timeout;
  std::string received;
  while (true) {
    if (options_.interrupted) {
      if (int signo = options_.interrupted(); signo != 0) {
        return Error(Code::kUnknown, std::string("interrupted by ") + strsignal(signo) +
                                         " while starting the private host");
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return Error(Code::kNotReady, "the private host (pvgpud) did not report ready within " +
                                        std::to_string(options_.ready_timeout.count() / 1000) +
                                        " s");
    }
    // Short slices, so that an interrupting signal is noticed promptly.
    pollfd entry{ready_fd, POLLIN, 0};
    int rc = poll(&entry, 1, static_cast<int>(std::min<long>(left.count(), 100)));
    if (rc < 0 && errno != EINTR) {
      return Error(Code::kUnknown, "waiting for pvgpud: poll: " + ErrnoText(errno));
    }
    if (rc <= 0) continue;
    char buffer[64];
    ssize_t got = read(ready_fd, buffer, sizeof(buffer));
    if (got < 0) {
      if (errno == EINTR) continue;
      return Error(Code::kUnknown, "waiting for pvgpud: read: " + ErrnoText(errno));
    }
    if (got == 0) break;
    received.append(buffer, static_cast<size_t>(got));
    if (size_t newline = received.find('\n'); newline != std::string::npos) {
      std::string line = received.substr(0, newline);
      if (line == "ready") return Status::Ok();
      return Error(Code::kUnknown,
                   "the private host (pvgpud) sent '" + line + "' instead of 'ready'");
    }
    if (received.size() > 256) {
      return Error(Code::kUnknown, "the private host (pvgpud) sent no line ending in 256 bytes");
    }
  }
  // End of file before "ready": usually the daemon has exited. Give it a moment to finish so
  // the message can say how it ended.
  int status = 0;
  if (WaitWithTimeout(pid_, std::chrono::milliseconds(1000), &status)) {
    pid_ = -1;
    return Error(Code::kUnknown, "the private host (pvgpud) " + DescribeWaitStatus(status) +
                                     " before it was ready");
  }
  return Error(Code::kUnknown,
               "the private host (pvgpud) closed its ready descriptor without reporting ready");
}

void PrivateHost::Abandon() {
  stopped_ = true;
  if (pid_ <= 0) return;
  KillGroupAndProcess(pid_, SIGKILL);
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void PrivateHost::Stop() {
  if (stopped_) return;
  stopped_ = true;
  std::string problem;
  int status = 0;
  if (pid_ > 0) {
    pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      problem = "the private host (pvgpud) " + DescribeWaitStatus(status) +
                " while the program was running";
    } else {
      KillGroupAndProcess(pid_, SIGTERM);
      if (!WaitWithTimeout(pid_, options_.stop_timeout, &status)) {
        KillGroupAndProcess(pid_, SIGKILL);
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        problem = "the private host (pvgpud) did not stop within " +
                  std::to_string(options_.stop_timeout.count() / 1000) +
                  " s of SIGTERM and was killed";
      } else {
        bool clean_exit = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        bool default_term = WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM;
        if (!clean_exit && !default_term) {
          problem = "the private host (pvgpud) " + DescribeWaitStatus(status) + " when stopped";
        }
      }
    }
    pid_ = -1;
  }
  if (!problem.empty()) {
    PrintWarning(problem + LogTail() + "\nThe private host's files are kept in " + directory_);
  } else if (options_.keep_logs) {
    PrintNote("private host logs kept in " + directory_);
  } else {
    std::error_code error;
    std::filesystem::remove_all(directory_, error);
    if (error) PrintWarning("cannot remove " + directory_ + ": " + error.message());
  }
}

std::string PrivateHost::LogTail() const {
  std::string text;
  for (const char* name : {kLogName, kOutputName}) {
    std::string path = directory_ + "/" + name;
    std::deque<std::string> lines = LastLines(path, kTailLines);
    if (lines.empty()) continue;
    text += "\n--- last lines of " + path + " ---";
    for (const std::string& line : lines) text += "\n  " + line;
  }
  return text;
}

}  // namespace pvgpu::tools
