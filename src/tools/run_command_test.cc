// Tests of `pvgpu run` through the real executable: argument handling, the environment the
// program sees, exit statuses, signal forwarding and the private host's life cycle.
//
// The private host here is testdata/fake_pvgpud.cc, a stand-in that only speaks pvgpud's
// start-up contract. It is installed into a scratch prefix that PVGPU_PREFIX points at.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/testdata/listening_socket.h"

extern char** environ;

namespace pvgpu::tools {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool WaitUntil(const std::function<bool()>& condition, milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// Gone, or a zombie nobody has reaped yet (an orphan whose new parent is slow to reap).
bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/pvgpu-run-test.XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    root_ = fs::canonical(dir_template);
    prefix_ = root_ / "prefix";
    runtime_ = root_ / "runtime";
    fs::create_directories(prefix_ / "bin");
    fs::create_directories(prefix_ / "lib" / "pvgpu");
    fs::create_directories(runtime_);
    fs::create_symlink(FAKE_PVGPUD_BINARY, prefix_ / "bin" / "pvgpud");
    std::ofstream(prefix_ / "lib" / "pvgpu" / "libcuda.so.1") << "";
  }

  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  // pvgpu's environment: the test's own, made independent of the caller's PVGPU_* settings.
  std::vector<std::string> Environment(const std::vector<std::string>& extra) const {
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      std::string text = *entry;
      std::string name = text.substr(0, text.find('='));
      if (name.rfind("PVGPU_", 0) == 0 || name.rfind("FAKE_PVGPUD_", 0) == 0 ||
          name == "XDG_RUNTIME_DIR" || name == "LD_LIBRARY_PATH") {
        continue;
      }
      env.push_back(text);
    }
    env.push_back("PVGPU_PREFIX=" + prefix_.string());
    env.push_back("XDG_RUNTIME_DIR=" + runtime_.string());
    env.push_back("FAKE_PVGPUD_RECORD=" + (root_ / "record.txt").string());
    for (const std::string& entry : extra) env.push_back(entry);
    return env;
  }

  pid_t Start(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
    std::vector<std::string> argv = {PVGPU_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = Environment(extra_env);
    std::vector<char*> c_argv, c_env;
    for (std::string& arg : argv) c_argv.push_back(arg.data());
    for (std::string& entry : env) c_env.push_back(entry.data());
    c_argv.push_back(nullptr);
    c_env.push_back(nullptr);
    std::string out = (root_ / "stdout.txt").string();
    std::string err = (root_ / "stderr.txt").string();
    pid_t pid = fork();
    if (pid == 0) {
      int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out_fd, 1);
      dup2(err_fd, 2);
      chdir(root_.c_str());
      execve(c_argv[0], c_argv.data(), c_env.data());
      _exit(99);
    }
    return pid;
  }

  Result Finish(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    Result result;
    result.exit_code = ExitCode(status);
    result.out = ReadFile(root_ / "stdout.txt");
    result.err = ReadFile(root_ / "stderr.txt");
    return result;
  }

  Result Run(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
    return Finish(Start(args, extra_env));
  }

  // What the fake daemon recorded: its pids and argument lines, one entry per start.
  std::vector<pid_t> DaemonPids() const {
    std::vector<pid_t> pids;
    for (const std::string& line : Lines(ReadFile(root_ / "record.txt"))) {
      if (line.rfind("pid=", 0) == 0) pids.push_back(std::stoi(line.substr(4)));
    }
    return pids;
  }
  std::string DaemonArgs() const {
    for (const std::string& line : Lines(ReadFile(root_ / "record.txt"))) {
      if (line.rfind("args=", 0) == 0) return line.substr(5);
    }
    return "";
  }

  bool RuntimeDirEmpty() const { return fs::is_empty(runtime_); }

  fs::path root_, prefix_, runtime_;
};

constexpr char kNoHost[] = "unix:/nonexistent/pvgpu-test.sock";

TEST_F(RunCommandTest, ExitStatusIsTheCommands) {
  EXPECT_EQ(Run({"run", "--host", kNoHost, "--", "true"}).exit_code, 0);
  EXPECT_EQ(Run({"run", "--host", kNoHost, "--", "sh", "-c", "exit 3"}).exit_code, 3);
  EXPECT_EQ(Run({"run", "--host", kNoHost, "--", "sh", "-c", "kill -TERM $$"}).exit_code, 143);
  EXPECT_EQ(Run({"run", "--host", kNoHost, "--", "sh", "-c", "kill -KILL $$"}).exit_code, 137);
}

TEST_F(RunCommandTest, MissingCommandGives127AndUnexecutableGives126) {
  Result missing = Run({"run", "--host", kNoHost, "--", "pvgpu-test-no-such-command"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("pvgpu-test-no-such-command: command not found"), std::string::npos)
      << missing.err;

  std::ofstream(root_ / "not-executable") << "#!/bin/sh\n";
  Result denied = Run({"run", "--host", kNoHost, "--", (root_ / "not-executable").string()});
  EXPECT_EQ(denied.exit_code, 126);
  EXPECT_NE(denied.err.find("Permission denied"), std::string::npos) << denied.err;
}

TEST_F(RunCommandTest, CommandSeesGuestLibrariesAndHost) {
  Result result = Run({"run", "--host", "unix:/some/where.sock", "--", "sh", "-c",
                       "printf '%s\\n%s\\n' \"$PVGPU_HOST\" \"$LD_LIBRARY_PATH\""},
                      {"LD_LIBRARY_PATH=/old/lib"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> lines = Lines(result.out);
  ASSERT_EQ(lines.size(), 2u) << result.out;
  EXPECT_EQ(lines[0], "unix:/some/where.sock");
  EXPECT_EQ(lines[1], (prefix_ / "lib" / "pvgpu").string() + ":/old/lib");

  Result no_old_path =
      Run({"run", "--host", kNoHost, "--", "sh", "-c", "echo \"$LD_LIBRARY_PATH\""});
  EXPECT_EQ(no_old_path.out, (prefix_ / "lib" / "pvgpu").string() + "\n");
}

TEST_F(RunCommandTest, HostFlagNeverStartsAPrivateHost) {
  Result result =
      Run({"run", "--host", kNoHost, "--adapters", "cpu", "--", "sh", "-c", "echo $PVGPU_HOST"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, std::string(kNoHost) + "\n");
  EXPECT_NE(result.err.find("no socket at /nonexistent/pvgpu-test.sock"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("--adapters applies only to a private host"), std::string::npos);
  EXPECT_TRUE(DaemonPids().empty());
  EXPECT_TRUE(RuntimeDirEmpty());
}

TEST_F(RunCommandTest, PrivateHostIsStartedAndCleanedUp) {
  Result result = Run({"run", "--", "sh", "-c",
                       "echo \"$PVGPU_HOST\"; test -S \"${PVGPU_HOST#unix:}\" && echo socket-ok"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  std::vector<std::string> lines = Lines(result.out);
  ASSERT_EQ(lines.size(), 2u) << result.out;
  const std::string dir_prefix = "unix:" + runtime_.string() + "/pvgpu-run.";
  ASSERT_EQ(lines[0].rfind(dir_prefix, 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "socket-ok");
  fs::path socket_path = lines[0].substr(5);
  fs::path dir = socket_path.parent_path();

  std::string args = DaemonArgs();
  EXPECT_NE(args.find("--listen " + lines[0] + " --adapters cpu --ready-fd "), std::string::npos)
      << args;
  EXPECT_NE(args.find("--log-file " + (dir / "pvgpud.log").string()), std::string::npos) << args;

  EXPECT_FALSE(fs::exists(dir)) << dir;
  EXPECT_TRUE(RuntimeDirEmpty());
  std::vector<pid_t> pids = DaemonPids();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(ProcessGone(pids[0]));
}

TEST_F(RunCommandTest, AdaptersAndKeepLogsReachThePrivateHost) {
  Result result = Run({"run", "--adapters", "cpu,cuda", "--keep-logs", "--", "true"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(DaemonArgs().find("--adapters cpu,cuda "), std::string::npos) << DaemonArgs();
  ASSERT_FALSE(RuntimeDirEmpty());
  fs::path dir = fs::directory_iterator(runtime_)->path();
  EXPECT_NE(result.err.find("private host logs kept in " + dir.string()), std::string::npos)
      << result.err;
  EXPECT_NE(ReadFile(dir / "pvgpud.log").find("fake pvgpud: stopping"), std::string::npos);
}

TEST_F(RunCommandTest, ReachableEnvironmentHostIsUsed) {
  fs::path socket_path = root_ / "existing.sock";
  const int fd = ListenOnUnixSocket(socket_path.string(), SOCK_SEQPACKET);
  ASSERT_GE(fd, 0);

  std::string host = "unix:" + socket_path.string();
  Result result = Run({"run", "--", "sh", "-c", "echo $PVGPU_HOST"}, {"PVGPU_HOST=" + host});
  close(fd);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, host + "\n");
  EXPECT_TRUE(DaemonPids().empty());
}

TEST_F(RunCommandTest, UnreachableEnvironmentHostStartsAPrivateHost) {
  std::string host = "unix:" + (root_ / "missing.sock").string();
  Result result = Run({"run", "--", "sh", "-c", "echo $PVGPU_HOST"}, {"PVGPU_HOST=" + host});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("unix:" + runtime_.string() + "/pvgpu-run.", 0), 0u) << result.out;
  EXPECT_NE(result.err.find("is not reachable; starting a private host"), std::string::npos);
  EXPECT_EQ(DaemonPids().size(), 1u);
  EXPECT_TRUE(RuntimeDirEmpty());
}

TEST_F(RunCommandTest, DaemonFailingToStartIsReportedWithItsLog) {
  fs::path marker = root_ / "ran";
  Result result = Run({"run", "--", "touch", marker.string()}, {"FAKE_PVGPUD_MODE=fail"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_FALSE(fs::exists(marker)) << "the command ran without a host";
  EXPECT_NE(result.err.find("exited with status 3 before it was ready"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("adapter 'bogus' is not available"), std::string::npos);
  EXPECT_NE(result.err.find("fake pvgpud: giving up"), std::string::npos);
  EXPECT_FALSE(RuntimeDirEmpty()) << "logs of a failed start must be kept";
}

TEST_F(RunCommandTest, MissingDaemonIsReported) {
  fs::remove(prefix_ / "bin" / "pvgpud");
  Result result = Run({"run", "--", "true"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_NE(result.err.find((prefix_ / "bin" / "pvgpud").string()), std::string::npos)
      << result.err;
  EXPECT_TRUE(RuntimeDirEmpty()) << "nothing to keep when the daemon never ran";
}

TEST_F(RunCommandTest, SignalsAreForwardedAndThePrivateHostStopped) {
  for (int signo : {SIGTERM, SIGINT, SIGHUP}) {
    fs::path marker = root_ / ("pid-" + std::to_string(signo));
    pid_t pvgpu =
        Start({"run", "--", "sh", "-c", "echo $$ > " + marker.string() + "; exec sleep 30"}, {});
    ASSERT_TRUE(WaitUntil([&] { return !ReadFile(marker).empty(); }, milliseconds(10000)));
    kill(pvgpu, signo);
    Result result = Finish(pvgpu);
    EXPECT_EQ(result.exit_code, 128 + signo) << result.err;
    EXPECT_TRUE(RuntimeDirEmpty());
  }
  for (pid_t pid : DaemonPids()) EXPECT_TRUE(ProcessGone(pid));
}

TEST_F(RunCommandTest, PrivateHostDiesWithPvgpu) {
  fs::path marker = root_ / "pid";
  pid_t pvgpu =
      Start({"run", "--", "sh", "-c", "echo $$ > " + marker.string() + "; exec sleep 30"}, {});
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(marker).empty(); }, milliseconds(10000)));
  kill(pvgpu, SIGKILL);
  Finish(pvgpu);
  std::vector<pid_t> pids = DaemonPids();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(pids[0]); }, milliseconds(5000)));
  kill(std::stoi(ReadFile(marker)), SIGKILL);
}

TEST_F(RunCommandTest, StubbornDaemonIsKilledAndItsLogsKept) {
  Result result = Run({"run", "--", "true"}, {"FAKE_PVGPUD_MODE=ignore-term"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.err.find("did not stop within 5 s of SIGTERM"), std::string::npos) << result.err;
  EXPECT_FALSE(RuntimeDirEmpty());
  for (pid_t pid : DaemonPids()) EXPECT_TRUE(ProcessGone(pid));
}

TEST_F(RunCommandTest, AbnormalDaemonExitKeepsLogs) {
  Result result = Run({"run", "--", "sh", "-c", "exit 5"}, {"FAKE_PVGPUD_MODE=crash-on-term"});
  EXPECT_EQ(result.exit_code, 5);
  EXPECT_NE(result.err.find("exited with status 9 when stopped"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("fake pvgpud: stopping"), std::string::npos) << result.err;
  EXPECT_FALSE(RuntimeDirEmpty());
}

TEST_F(RunCommandTest, CommandLineForms) {
  // Without `--` the first positional starts COMMAND and its options stay its own.
  EXPECT_EQ(Run({"run", "--host", kNoHost, "sh", "-c", "exit 4"}).exit_code, 4);
  // After `--` nothing is parsed by pvgpu, not even another `--` or --host.
  Result passthrough =
      Run({"run", "--host", kNoHost, "--", "sh", "-c", "echo \"$@\"", "sh", "--host", "--", "x"});
  EXPECT_EQ(passthrough.out, "--host -- x\n");
}

TEST_F(RunCommandTest, UsageErrorsExitWith2) {
  Result no_command = Run({"run"});
  EXPECT_EQ(no_command.exit_code, 2);
  EXPECT_NE(no_command.err.find("no COMMAND given"), std::string::npos) << no_command.err;
  EXPECT_EQ(Run({"run", "--"}).exit_code, 2);
  Result unknown = Run({"run", "--bogus", "--", "true"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown option '--bogus'"), std::string::npos) << unknown.err;
  Result bad_host = Run({"run", "--host", "http://example.com", "--", "true"});
  EXPECT_EQ(bad_host.exit_code, 2);
  EXPECT_NE(bad_host.err.find("unsupported host address"), std::string::npos) << bad_host.err;
  EXPECT_EQ(Run({}).exit_code, 2);
  EXPECT_EQ(Run({"no-such-subcommand"}).exit_code, 2);
}

TEST_F(RunCommandTest, HelpAndVersion) {
  Result version = Run({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, "pvgpu " PVGPU_TEST_VERSION "\n");
  Result help = Run({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("[OPTIONS] [--] COMMAND [ARGS...]"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--keep-logs"), std::string::npos);
}

}  // namespace
}  // namespace pvgpu::tools
