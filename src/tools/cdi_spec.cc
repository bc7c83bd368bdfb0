#include "tools/cdi_spec.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/paths.h"

namespace pvgpu::tools {

using nlohmann::json;

namespace {

// Mount options: libraries are read-only and never carry set-id bits or device nodes; the
// socket must stay writable (connect() needs write permission on it).
const json kLibraryMountOptions = {"ro", "nosuid", "nodev", "bind"};
const json kSocketMountOptions = {"nosuid", "nodev", "noexec", "bind"};

Status Invalid(const std::string& what) {
  return Error(Code::kInvalidValue, "invalid CDI spec: " + what);
}

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// CDI names: alphanumeric at both ends, `extra` characters allowed inside.
bool ValidName(const std::string& name, const std::string& extra) {
  if (name.empty() || !IsAlnum(name.front()) || !IsAlnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return IsAlnum(c) || extra.find(c) != std::string::npos;
  });
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

json SocketEdits(const std::string& host_path, const std::string& container_path) {
  return {{"mounts", json::array({{{"hostPath", host_path},
                                   {"containerPath", container_path},
                                   {"options", kSocketMountOptions}}})}};
}

// A non-admin local listener whose adapter set is exactly `wanted`; empty when there is none.
std::string ListenerFor(const json& listeners, std::set<int> wanted) {
  for (const json& listener : listeners) {
    if (listener.value("admin", true)) continue;
    std::string path;
    if (!LocalSocketPath(listener.value("address", ""), &path) || path[0] != '/') continue;
    std::set<int> served;
    for (const json& index : listener.value("adapters", json::array())) {
      served.insert(index.get<int>());
    }
    if (served == wanted) return path;
  }
  return {};
}

Status CheckKeys(const json& object, const std::set<std::string>& allowed,
                 const std::string& where) {
  if (!object.is_object()) return Invalid(where + " must be an object");
  for (const auto& [key, value] : object.items()) {
    if (allowed.count(key) == 0) return Invalid(where + " has unknown key \"" + key + "\"");
  }
  return Status::Ok();
}

Status CheckStrings(const json& object, const std::string& key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return Status::Ok();
  if (!it->is_array()) return Invalid(where + "." + key + " must be a list of strings");
  for (const json& item : *it) {
    if (!item.is_string()) return Invalid(where + "." + key + " must be a list of strings");
  }
  return Status::Ok();
}

Status CheckPath(const json& object, const std::string& key, const std::string& where,
                 bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    return required ? Invalid(where + " lacks \"" + key + "\"") : Status::Ok();
  }
  if (!it->is_string() || it->get<std::string>().empty() || it->get<std::string>()[0] != '/') {
    return Invalid(where + "." + key + " must be an absolute path");
  }
  return Status::Ok();
}

Status CheckEdits(const json& edits, const std::string& where) {
  PVGPU_TRY(CheckKeys(edits, {"env", "deviceNodes", "hooks", "mounts"}, where));
  PVGPU_TRY(CheckStrings(edits, "env", where));
  for (const json& variable : edits.value("env", json::array())) {
    const std::string text = variable.get<std::string>();
    if (text.find('=') == std::string::npos || text[0] == '=') {
      return Invalid(where + ".env entry \"" + text + "\" is not KEY=VALUE");
    }
  }
  for (const char* list : {"deviceNodes", "hooks", "mounts"}) {
    if (edits.contains(list) && !edits[list].is_array()) {
      return Invalid(where + "." + list + " must be a list");
    }
  }
  for (const json& mount : edits.value("mounts", json::array())) {
    const std::string at = where + ".mounts[]";
    PVGPU_TRY(CheckKeys(mount, {"hostPath", "containerPath", "options", "type"}, at));
    PVGPU_TRY(CheckPath(mount, "hostPath", at, true));
    PVGPU_TRY(CheckPath(mount, "containerPath", at, true));
    PVGPU_TRY(CheckStrings(mount, "options", at));
  }
  for (const json& node : edits.value("deviceNodes", json::array())) {
    const std::string at = where + ".deviceNodes[]";
    PVGPU_TRY(CheckKeys(node, {"path", "hostPath", "type", "major", "minor", "fileMode",
                               "permissions", "uid", "gid"},
                        at));
    PVGPU_TRY(CheckPath(node, "path", at, true));
  }
  for (const json& hook : edits.value("hooks", json::array())) {
    const std::string at = where + ".hooks[]";
    PVGPU_TRY(CheckKeys(hook, {"hookName", "path", "args", "env", "timeout"}, at));
    if (!hook.contains("hookName") || !hook["hookName"].is_string()) {
      return Invalid(at + " lacks \"hookName\"");
    }
    PVGPU_TRY(CheckPath(hook, "path", at, true));
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> ContainerLibraryDirs() {
#if defined(__aarch64__)
  return {"/usr/lib/aarch64-linux-gnu", "/usr/lib64"};
#else
  return {"/usr/lib/x86_64-linux-gnu", "/usr/lib64"};
#endif
}

StatusOr<CdiSpec> BuildCdiSpec(const json& host_status, const CdiOptions& options) {
  if (!host_status.contains("listeners")) {
    return Error(Code::kNotPermitted,
                 "the host did not list its listeners: connect to its admin socket (the "
                 "default socket, or a --listen address), not a container's socket");
  }
  const json& listeners = host_status["listeners"];
  const json adapters = host_status.value("adapters", json::array());
  if (adapters.empty()) return Error(Code::kNoDevice, "the host serves no adapters");

  CdiSpec out;
  json devices = json::array();
  // Host socket -> its place in the container, so that "all" on a one-adapter host reuses
  // device 0's place and giving both does not show the adapter twice.
  std::map<std::string, std::string> placed;
  std::set<int> every;
  for (const json& adapter : adapters) every.insert(adapter.value("host_index", -1));
  for (const json& adapter : adapters) {
    const int index = adapter.value("host_index", -1);
    const std::string uuid = adapter.value("uuid", "");
    const std::string socket = ListenerFor(listeners, {index});
    if (socket.empty()) {
      out.warnings.push_back("adapter " + std::to_string(index) + " (" + uuid +
                             ") has no non-admin listener of its own; it is left out");
      continue;
    }
    const std::string place = options.device_root + "/gpu-" + std::to_string(index) + ".sock";
    placed.emplace(socket, place);
    const json edits = SocketEdits(socket, place);
    devices.push_back({{"name", std::to_string(index)}, {"containerEdits", edits}});
    if (!uuid.empty()) devices.push_back({{"name", uuid}, {"containerEdits", edits}});
  }
  if (devices.empty()) {
    return Error(Code::kNotFound,
                 "the host has no non-admin listener serving a single adapter, so there is no "
                 "socket to give a container; start pvgpud with --device-sockets DIR (e.g. "
                 "/run/pvgpu/devices) or list such listeners in its --config file");
  }
  const std::string all_socket = ListenerFor(listeners, every);
  if (!all_socket.empty()) {
    auto it = placed.find(all_socket);
    const std::string place =
        it != placed.end() ? it->second : options.device_root + "/all.sock";
    devices.push_back({{"name", "all"}, {"containerEdits", SocketEdits(all_socket, place)}});
  } else {
    out.warnings.push_back("no non-admin listener serves every adapter; there is no \"all\"");
  }

  json mounts = json::array();
  for (const std::string& library : options.libraries) {
    for (const std::string& dir : ContainerLibraryDirs()) {
      mounts.push_back({{"hostPath", library},
                        {"containerPath", dir + "/" + BaseName(library)},
                        {"options", kLibraryMountOptions}});
    }
  }
  out.spec = {{"cdiVersion", kCdiVersion},
              {"kind", options.kind},
              {"devices", devices},
              {"containerEdits",
               {{"env", json::array({"PVGPU_HOST=dir:" + options.device_root})},
                {"mounts", mounts}}}};
  PVGPU_TRY(ValidateCdiSpec(out.spec));
  return out;
}

Status ValidateCdiSpec(const json& spec) {
  PVGPU_TRY(CheckKeys(spec, {"cdiVersion", "kind", "devices", "containerEdits", "annotations"},
                      "the spec"));
  if (!spec.contains("cdiVersion") || !spec["cdiVersion"].is_string()) {
    return Invalid("\"cdiVersion\" (a string) is required");
  }
  const std::string version = spec["cdiVersion"].get<std::string>();
  if (std::count(version.begin(), version.end(), '.') != 2 ||
      !ValidName(version, ".") || version.find_first_not_of("0123456789.") != std::string::npos) {
    return Invalid("cdiVersion \"" + version + "\" is not MAJOR.MINOR.PATCH");
  }
  if (!spec.contains("kind") || !spec["kind"].is_string()) {
    return Invalid("\"kind\" (a string) is required");
  }
  const std::string kind = spec["kind"].get<std::string>();
  const size_t slash = kind.find('/');
  if (slash == std::string::npos || !ValidName(kind.substr(0, slash), "_.-") ||
      !ValidName(kind.substr(slash + 1), "_-")) {
    return Invalid("kind \"" + kind + "\" is not VENDOR/CLASS (e.g. pvgpu.dev/gpu)");
  }
  if (!spec.contains("devices") || !spec["devices"].is_array() || spec["devices"].empty()) {
    return Invalid("\"devices\" must be a non-empty list");
  }
  std::set<std::string> names;
  for (const json& device : spec["devices"]) {
    PVGPU_TRY(CheckKeys(device, {"name", "containerEdits", "annotations"}, "a device"));
    if (!device.contains("name") || !device["name"].is_string()) {
      return Invalid("a device lacks \"name\"");
    }
    const std::string name = device["name"].get<std::string>();
    if (!ValidName(name, "_.:-")) return Invalid("device name \"" + name + "\" is not valid");
    if (!names.insert(name).second) return Invalid("device \"" + name + "\" is listed twice");
    if (!device.contains("containerEdits")) {
      return Invalid("device \"" + name + "\" lacks \"containerEdits\"");
    }
    PVGPU_TRY(CheckEdits(device["containerEdits"], "device \"" + name + "\".containerEdits"));
  }
  if (spec.contains("containerEdits")) {
    PVGPU_TRY(CheckEdits(spec["containerEdits"], "containerEdits"));
  }
  return Status::Ok();
}

}  // namespace pvgpu::tools
