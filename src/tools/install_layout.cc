#include "tools/install_layout.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pvgpu::tools {
namespace {

std::string Dirname(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

StatusOr<InstallLayout> LayoutForPrefix(const std::string& prefix) {
  char resolved[PATH_MAX];
  if (realpath(prefix.c_str(), resolved) == nullptr) {
    return Error(Code::kFileNotFound,
                 "pvgpu prefix '" + prefix + "' is not usable: " + std::strerror(errno));
  }
  if (!IsDirectory(resolved)) {
    return Error(Code::kFileNotFound, "pvgpu prefix '" + prefix + "' is not a directory");
  }
  InstallLayout layout;
  layout.prefix = resolved;
  // realpath("/") is "/"; avoid "//bin".
  std::string base = layout.prefix == "/" ? "" : layout.prefix;
  layout.daemon = base + "/bin/pvgpud";
  layout.guest_lib_dir = base + "/lib/pvgpu";
  layout.libexec_dir = base + "/libexec/pvgpu";
  return layout;
}

StatusOr<InstallLayout> FindInstallLayout() {
  if (const char* env = std::getenv("PVGPU_PREFIX"); env != nullptr && *env != '\0') {
    StatusOr<InstallLayout> layout = LayoutForPrefix(env);
    if (!layout.ok()) return layout.status().WithContext("from PVGPU_PREFIX");
    return layout;
  }
  // /proc/self/exe is already free of symlinks, so a /usr/local/bin/pvgpu link into
  // /opt/pvgpu/bin still finds /opt/pvgpu.
  char exe[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length < 0) {
    return Error(Code::kFileNotFound,
                 std::string("cannot find the pvgpu executable through /proc/self/exe (") +
                     std::strerror(errno) + "); set PVGPU_PREFIX to the install prefix");
  }
  exe[length] = '\0';
  return LayoutForPrefix(Dirname(Dirname(exe)));
}

std::string PrependToSearchPath(const std::string& dir, const char* old_value) {
  if (old_value == nullptr || *old_value == '\0') return dir;
  return dir + ":" + old_value;
}

}  // namespace pvgpu::tools
