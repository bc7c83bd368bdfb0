#include "tools/cdi_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "common/paths.h"
#include "guest/client/client.h"
#include "tools/cdi_spec.h"
#include "tools/console.h"
#include "tools/host_address.h"
#include "tools/host_status.h"
#include "tools/install_layout.h"

namespace pvgpu::tools {

using nlohmann::json;

namespace {

constexpr int kExitFailure = 1;

// The host to ask: --host, else PVGPU_HOST, else the default socket. The spec describes one
// host, so a list is refused rather than silently cut to its first entry.
StatusOr<std::string> ChooseHost(const std::string& flag) {
  std::string text = flag;
  std::string from = "--host";
  if (text.empty()) {
    const char* env = std::getenv("PVGPU_HOST");
    text = env != nullptr && *env != '\0' ? env : "unix:" + DefaultSocketPath();
    from = env != nullptr && *env != '\0' ? "PVGPU_HOST" : "the default socket";
  }
  if (text.find(',') != std::string::npos) {
    return Error(Code::kInvalidValue,
                 from + " names several hosts (" + text + "); choose one with --host");
  }
  PVGPU_ASSIGN_OR_RETURN(HostAddress address, ParseHostAddress(text));
  if (address.kind != HostAddress::Kind::kUnix) {
    return Error(Code::kNotSupported, "a CDI spec mounts a local socket; " + text +
                                          " is a network host (run this on the host itself)");
  }
  return "unix:" + address.target;
}

// libcuda.so.1 must exist; libnvidia-ml.so.1 is mounted when present (NVML clients such as
// nvidia-smi look for it, CUDA programs do not need it).
StatusOr<std::vector<std::string>> GuestLibraries() {
  PVGPU_ASSIGN_OR_RETURN(InstallLayout layout, FindInstallLayout());
  std::vector<std::string> out;
  for (const char* name : {"libcuda.so.1", "libnvidia-ml.so.1"}) {
    const std::string path = layout.guest_lib_dir + "/" + name;
    if (access(path.c_str(), R_OK) == 0) {
      out.push_back(path);
    } else if (std::string(name) == "libcuda.so.1") {
      return Error(Code::kFileNotFound,
                   "the guest library " + path + " is missing; is pvgpu installed completely?");
    } else {
      PrintWarning(path + " is missing; containers will have CUDA but no NVML");
    }
  }
  return out;
}

// Replaces `path` in one step, so that a container engine reading the CDI directory never sees
// half a spec.
Status WriteAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream file(temporary, std::ios::trunc);
    if (!file) {
      return Error(Code::kNotPermitted,
                   "cannot write " + temporary + ": " + std::strerror(errno) +
                       (errno == EACCES ? " (writing to /etc/cdi needs root)" : ""));
    }
    file << text;
    file.close();
    if (!file) return Error(Code::kUnknown, "cannot write " + temporary);
  }
  chmod(temporary.c_str(), 0644);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return Error(Code::kNotPermitted, "cannot replace " + path + ": " + std::strerror(error));
  }
  return Status::Ok();
}

}  // namespace

int GenerateCdiSpec(const CdiGenerateOptions& options) {
  if (options.device_root.empty() || options.device_root[0] != '/') {
    PrintError("--device-root must be an absolute path inside the container");
    return kExitUsage;
  }
  auto host = ChooseHost(options.host);
  if (!host.ok()) {
    PrintError(host.status().message());
    return kExitUsage;
  }
  auto libraries = GuestLibraries();
  if (!libraries.ok()) {
    PrintError(libraries.status().message());
    return kExitFailure;
  }
  auto status = FetchHostStatusJson(*host);
  if (!status.ok()) {
    PrintError(status.status().message());
    return kExitFailure;
  }
  CdiOptions cdi;
  cdi.kind = options.kind;
  cdi.device_root = options.device_root;
  cdi.libraries = *libraries;
  auto spec = BuildCdiSpec(*status, cdi);
  if (!spec.ok()) {
    PrintError(spec.status().message() + " (host " + *host + ")");
    return kExitFailure;
  }
  for (const std::string& warning : spec->warnings) PrintWarning(warning);

  const std::string text = spec->spec.dump(2) + "\n";
  std::string names;
  for (const json& device : spec->spec["devices"]) {
    names += (names.empty() ? "" : ", ") + device["name"].get<std::string>();
  }
  if (options.output.empty()) {
    std::cout << text << std::flush;
    PrintNote("CDI devices " + options.kind + "={" + names +
              "}; to install: pvgpu cdi generate --output /etc/cdi/pvgpu.json");
    return 0;
  }
  Status written = WriteAtomically(options.output, text);
  if (!written.ok()) {
    PrintError(written.message());
    return kExitFailure;
  }
  PrintNote("wrote " + options.output + ": CDI devices " + options.kind + "={" + names + "}");
  if (options.output.rfind("/etc/cdi/", 0) != 0 && options.output.rfind("/var/run/cdi/", 0) != 0) {
    PrintNote("container engines read specs from /etc/cdi and /var/run/cdi");
  }
  PrintNote("e.g. podman run --device " + options.kind + "=0 IMAGE COMMAND");
  return 0;
}

Subcommand RegisterCdiCommand(CLI::App& app) {
  auto options = std::make_shared<CdiGenerateOptions>();
  CLI::App* cdi = app.add_subcommand(
      "cdi", "Container Device Interface: give containers pvgpu devices (podman --device)");
  cdi->require_subcommand(1);
  CLI::App* generate = cdi->add_subcommand(
      "generate",
      "Write a CDI spec for the running host: one device per adapter (by index and by UUID) "
      "and 'all', each mounting the host socket that serves exactly those adapters");
  generate
      ->add_option("--host", options->host,
                   "The host's admin socket (default: PVGPU_HOST, else the default socket)")
      ->type_name("ADDR");
  generate
      ->add_option("--output", options->output,
                   "Write the spec to FILE (e.g. /etc/cdi/pvgpu.json) instead of stdout")
      ->type_name("FILE");
  generate
      ->add_option("--device-root", options->device_root,
                   "Directory inside the container where device sockets are mounted")
      ->type_name("DIR")
      ->capture_default_str();
  generate->add_option("--kind", options->kind, "The spec's CDI kind (VENDOR/CLASS)")
      ->capture_default_str();
  auto run = [options]() { return GenerateCdiSpec(*options); };
  return Subcommand{cdi, run, /*takes_trailing_arguments=*/false};
}

}  // namespace pvgpu::tools
