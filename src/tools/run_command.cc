#include "tools/run_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/log.h"
#include "tools/child_process.h"
#include "tools/console.h"
#include "tools/host_address.h"
#include "tools/install_layout.h"
#include "tools/private_host.h"
#include "tools/signal_forwarder.h"

extern char** environ;

namespace pvgpu::tools {
namespace {

// Shown by `pvgpu run --help`; hand-wrapped because CLI11 does not wrap descriptions.
constexpr char kDescription[] =
    "Run COMMAND with the pvgpu guest libraries (PREFIX/lib/pvgpu) first on LD_LIBRARY_PATH\n"
    "and PVGPU_HOST naming the host that executes its CUDA calls.\n\n"
    "The host is, in order: --host ADDR; else PVGPU_HOST when it can be reached; else a\n"
    "private pvgpud started for this command alone and stopped when it ends.\n\n"
    "Exit status: COMMAND's (128+N when signal N killed it); 127 when COMMAND is not found,\n"
    "126 when it cannot be executed, 125 when the private host could not start, 2 for usage\n"
    "errors. SIGINT, SIGTERM and SIGHUP sent to pvgpu are passed on to COMMAND.\n";

constexpr char kFooter[] =
    "Addresses (ADDR): unix:PATH or a socket path; tcp://HOST:PORT; tls://HOST:PORT.\n\n"
    "Environment:\n"
    "  PVGPU_HOST     host to use when --host is not given\n"
    "  PVGPU_PREFIX   install prefix (default: the directory above pvgpu's bin/)\n"
    "  PVGPU_LOG      log level of pvgpu and the guest libraries (error..trace)\n\n"
    "Examples:\n"
    "  pvgpu run -- ./saxpy\n"
    "  pvgpu run --adapters cpu --keep-logs -- python3 train.py --epochs 3\n"
    "  pvgpu run --host unix:/run/pvgpu/pvgpud.sock -- nvidia-smi";

// CLI11 would print "pvgpu run [OPTIONS]"; the command after `--` is the point of `run`.
class RunFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    return "Usage: " + name + " [OPTIONS] [--] COMMAND [ARGS...]\n";
  }
  // The subcommand's own description is the one-line summary for `pvgpu --help`.
  std::string make_description(const CLI::App* app) const override {
    return std::string(kDescription) + "\n";
  }
};

bool PathExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// The caller's environment with the two variables that pvgpu run owns replaced.
std::vector<std::string> ChildEnvironment(const InstallLayout& layout, const std::string& host) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "LD_LIBRARY_PATH=", 16) == 0) continue;
    if (std::strncmp(*entry, "PVGPU_HOST=", 11) == 0) continue;
    env.emplace_back(*entry);
  }
  env.push_back("LD_LIBRARY_PATH=" +
                PrependToSearchPath(layout.guest_lib_dir, std::getenv("LD_LIBRARY_PATH")));
  env.push_back("PVGPU_HOST=" + host);
  return env;
}

// Chooses the host as documented in kDescription. Returns "" when a private host is needed;
// sets *exit_code on a usage error.
std::string ChooseExistingHost(const RunOptions& options, int* exit_code) {
  if (options.host) {
    StatusOr<HostAddress> address = ParseHostAddress(*options.host);
    if (!address.ok()) {
      PrintError("--host: " + address.status().message());
      *exit_code = kExitUsage;
      return "";
    }
    if (address->kind == HostAddress::Kind::kUnix && !PathExists(address->target)) {
      PrintWarning("no socket at " + address->target +
                   "; CUDA calls will fail unless a pvgpud listens there");
    }
    return *options.host;
  }
  const char* env = std::getenv("PVGPU_HOST");
  if (env == nullptr || *env == '\0') return "";
  StatusOr<HostAddress> address = ParseHostAddress(env);
  if (!address.ok()) {
    PrintWarning("ignoring PVGPU_HOST: " + address.status().message() +
                 "; starting a private host");
    return "";
  }
  if (!IsReachable(*address)) {
    PrintWarning(std::string("PVGPU_HOST=") + env + " is not reachable; starting a private host");
    return "";
  }
  PVGPU_DEBUG("using PVGPU_HOST=" << env);
  return env;
}

}  // namespace

int RunCommand(const RunOptions& options) {
  StatusOr<InstallLayout> layout = FindInstallLayout();
  if (!layout.ok()) {
    PrintError(layout.status().message());
    return kExitHostFailed;
  }
  if (!PathExists(layout->guest_lib_dir + "/libcuda.so.1")) {
    PrintWarning("no guest library at " + layout->guest_lib_dir +
                 "/libcuda.so.1; COMMAND will not reach pvgpu (set PVGPU_PREFIX?)");
  }

  // Installed first so that a Ctrl-C while the private host starts is seen and cleaned up.
  SignalForwarder forwarder;
  int exit_code = 0;
  std::string host = ChooseExistingHost(options, &exit_code);
  if (exit_code != 0) return exit_code;
  if (!host.empty() && options.adapters) {
    PrintWarning("--adapters applies only to a private host; ignored for " + host);
  }

  std::unique_ptr<PrivateHost> private_host;
  if (host.empty()) {
    PrivateHost::Options host_options;
    host_options.daemon_path = layout->daemon;
    if (options.adapters) host_options.adapters = *options.adapters;
    host_options.keep_logs = options.keep_logs;
    host_options.interrupted = [&forwarder] { return forwarder.LastSignal(); };
    StatusOr<std::unique_ptr<PrivateHost>> started = PrivateHost::Start(host_options);
    if (!started.ok()) {
      if (int signo = forwarder.LastSignal(); signo != 0) return 128 + signo;
      PrintError(started.status().message());
      return kExitHostFailed;
    }
    private_host = std::move(started).value();
    host = private_host->address();
    PVGPU_INFO("private host " << host << " (pvgpud pid " << private_host->pid() << ")");
  }

  std::vector<std::string> env = ChildEnvironment(*layout, host);
  forwarder.Block();
  if (int signo = forwarder.LastSignal(); signo != 0) {
    // Interrupted before COMMAND existed: do not start it at all.
    forwarder.Unblock();
    return 128 + signo;
  }
  SpawnResult spawned = SpawnCommand(options.command, env);
  if (spawned.exec_errno != 0) {
    forwarder.Unblock();
    int code = ExitCodeForExecError(spawned.exec_errno);
    PrintError(options.command[0] + ": " +
               (code == kExitNotFound ? std::string("command not found")
                                      : std::strerror(spawned.exec_errno)));
    return code;
  }
  forwarder.SetTarget(spawned.pid);
  forwarder.Unblock();
  exit_code = WaitForExitCode(spawned.pid);
  forwarder.SetTarget(0);
  // Stopped here, not by the destructor, so its messages follow COMMAND's output.
  if (private_host) private_host->Stop();
  return exit_code;
}

Subcommand RegisterRunCommand(CLI::App& app, const std::vector<std::string>* trailing) {
  struct Parsed {
    std::string host;
    std::string adapters;
    bool keep_logs = false;
  };
  auto parsed = std::make_shared<Parsed>();
  CLI::App* run = app.add_subcommand(
      "run", "Run a program against a pvgpu host (a private one unless one is given)");
  run->footer(kFooter);
  run->formatter(std::make_shared<RunFormatter>());
  // Everything from the first positional on is COMMAND, so `pvgpu run ./app -v` also works
  // without `--`.
  run->prefix_command();
  CLI::Option* host_option =
      run->add_option("--host", parsed->host,
                      "Use the host at ADDR; never start a private one, even if ADDR is "
                      "unreachable")
          ->type_name("ADDR");
  CLI::Option* adapters_option =
      run->add_option("--adapters", parsed->adapters,
                      "Adapters of the private host, comma-separated (default: cpu)")
          ->type_name("LIST");
  run->add_flag("--keep-logs", parsed->keep_logs,
                "Keep the private host's directory (socket, pvgpud.log) and print its path");

  auto execute = [run, parsed, host_option, adapters_option, trailing]() -> int {
    RunOptions options;
    if (host_option->count() > 0) options.host = parsed->host;
    if (adapters_option->count() > 0) options.adapters = parsed->adapters;
    options.keep_logs = parsed->keep_logs;
    std::vector<std::string> before_separator = run->remaining();
    if (!before_separator.empty() && before_separator[0].rfind('-', 0) == 0) {
      PrintError("unknown option '" + before_separator[0] + "' for 'pvgpu run'; see --help");
      return kExitUsage;
    }
    if (!before_separator.empty() && !trailing->empty()) {
      PrintError("COMMAND given both before and after '--': " + before_separator[0]);
      return kExitUsage;
    }
    options.command = trailing->empty() ? before_separator : *trailing;
    if (options.command.empty()) {
      PrintError("no COMMAND given; usage: pvgpu run [OPTIONS] -- COMMAND [ARGS...]");
      return kExitUsage;
    }
    return RunCommand(options);
  };
  return Subcommand{run, execute, /*takes_trailing_arguments=*/true};
}

}  // namespace pvgpu::tools
