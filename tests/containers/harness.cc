#include "harness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pvgpu::containers {

std::vector<std::string> PodmanRun(const std::string& rootfs,
                                   const std::vector<std::string>& extra,
                                   const std::vector<std::string>& command) {
  // This machine's podman: cgroupfs (no systemd), runc, no network, and limits the
  // sandbox allows (podman's defaults exceed them). See DEVELOPERS.md.
  std::vector<std::string> argv = {"podman",      "--cgroup-manager=cgroupfs",
                                   "--runtime",   "runc",
                                   "run",         "--rm",
                                   "--network",   "none",
                                   "--ulimit",    "nofile=1024:1024",
                                   "--ulimit",    "nproc=1024:1024"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--rootfs");
  argv.push_back(rootfs);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string PodmanUnavailableReason(const std::string& rootfs) {
  if (geteuid() != 0) {
    return "the container tests need root: they run rootful podman and install a CDI spec "
           "in /var/run/cdi";
  }
  Outcome version = RunCommand({"podman", "--version"});
  if (version.exit_code != 0) {
    return "podman is not installed (exit " + std::to_string(version.exit_code) +
           "); scripts/install-deps.sh installs it";
  }
  // The probe without arguments prints its usage and exits 2. podman exits 125 when the
  // fault is its own or the runtime's; anything else is a fault of the test's root filesystem.
  Outcome trial = RunCommand(PodmanRun(rootfs, {"-e", "LD_LIBRARY_PATH=/opt/pvgpu-lib"},
                                       {"/opt/pvgpu-test/container_probe"}));
  if (trial.exit_code == 125) {
    return "podman cannot run a container here (exit 125): " + trial.output;
  }
  if (trial.exit_code != 2) {
    throw std::runtime_error("the trial container exited " + std::to_string(trial.exit_code) +
                             ": " + trial.output);
  }
  return "";
}

Daemon::Daemon(const std::string& binary, const std::string& dir,
               std::vector<std::string> args) {
  int ready[2];
  if (pipe(ready) != 0) throw std::runtime_error("pipe failed");
  args.insert(args.begin(), binary);
  args.push_back("--ready-fd=" + std::to_string(ready[1]));
  args.push_back("--log-file=" + dir + "/pvgpud.log");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    close(ready[0]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(ready[1]);
  std::string said;
  char buffer[64];
  ssize_t n;
  while ((n = read(ready[0], buffer, sizeof(buffer))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) said.append(buffer, static_cast<size_t>(n));
  }
  close(ready[0]);
  if (said.rfind("ready", 0) != 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    error_ = "pvgpud did not start (exit " + std::to_string(ExitCodeFromWaitStatus(status)) +
             "); its log:\n" + ReadFile(dir + "/pvgpud.log");
  }
}

Daemon::~Daemon() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) out.push_back(line);
  return out;
}

std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  for (const std::string& line : Lines(text)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace pvgpu::containers
