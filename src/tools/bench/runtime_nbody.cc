#include "tools/bench/runtime_nbody.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tools/child_process.h"
#include "tools/install_layout.h"

extern char** environ;

namespace pvgpu::tools::bench {
namespace {

// A private directory for the program's output and dump, removed with it.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/pvgpu-bench-nbody.XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    if (path_.empty()) return;
    for (const char* name : {"/output", "/positions"}) unlink((path_ + name).c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

}  // namespace

std::string RuntimeNbodyPath(const InstallLayout& layout) { return layout.libexec_dir + "/nbody"; }

StatusOr<RuntimeNbodyRun> RunRuntimeNbody(const HostSession& host, int n, int steps) {
  const std::string program = RuntimeNbodyPath(host.layout());
  if (access(program.c_str(), X_OK) != 0) {
    return Error(Code::kNotFound, "no CUDA runtime nbody at " + program +
                                      " (it is built only where nvcc was found)");
  }
  ScratchDir scratch;
  if (scratch.path().empty()) {
    return Error(Code::kUnknown, std::string("mkdtemp: ") + std::strerror(errno));
  }
  const std::string output = scratch.path() + "/output";
  const std::string dump = scratch.path() + "/positions";

  // As `pvgpu run` runs a program: the guest libraries first on the library path, the host named.
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "PVGPU_HOST=", 11) == 0) continue;
    if (std::strncmp(*entry, "LD_LIBRARY_PATH=", 16) == 0) continue;
    env.emplace_back(*entry);
  }
  env.push_back("PVGPU_HOST=" + host.address());
  env.push_back("LD_LIBRARY_PATH=" +
                PrependToSearchPath(host.layout().guest_lib_dir, std::getenv("LD_LIBRARY_PATH")));
  std::vector<std::string> argv = {program, "-benchmark", "-numbodies=" + std::to_string(n),
                                   "-iterations=" + std::to_string(steps), "-dump=" + dump};
  std::vector<char*> c_argv, c_env;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  for (std::string& entry : env) c_env.push_back(entry.data());
  c_env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  const int spawned =
      posix_spawn(&pid, program.c_str(), &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return Error(Code::kUnknown, "cannot start " + program + ": " + std::strerror(spawned));
  }
  const int status = WaitForExitCode(pid);
  const std::string printed = ReadFile(output);
  if (status != 0) {
    return Error(Code::kUnknown, program + " exited with status " + std::to_string(status) +
                                     " (its error is on stderr above)");
  }
  RuntimeNbodyRun run;
  const size_t at = printed.rfind("timed seconds: ");
  if (at == std::string::npos || !(std::istringstream(printed.substr(at + 15)) >> run.seconds) ||
      run.seconds <= 0) {
    return Error(Code::kUnknown, program + " printed no timing:\n" + printed);
  }
  const std::string bytes = ReadFile(dump);
  const size_t expected = 4 * static_cast<size_t>(n) * sizeof(float);
  if (bytes.size() != expected) {
    return Error(Code::kUnknown, program + " wrote " + std::to_string(bytes.size()) +
                                     " bytes of positions, expected " + std::to_string(expected));
  }
  run.positions.resize(4 * static_cast<size_t>(n));
  std::memcpy(run.positions.data(), bytes.data(), expected);
  return run;
}

}  // namespace pvgpu::tools::bench
