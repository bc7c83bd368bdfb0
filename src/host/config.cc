#include "host/config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "adapters/registry.h"
#include "common/paths.h"

namespace pvgpu::host {

using nlohmann::json;

namespace {

// Socket files of container-facing listeners: owner and group only, unless the file says
// otherwise (rootless containers need "0666" or a shared group).
constexpr int kDefaultListenerMode = 0660;

Status Bad(const std::string& where, const std::string& what) {
  return Error(Code::kInvalidValue, where + ": " + what);
}

Status CheckKeys(const json& object, const std::set<std::string>& allowed,
                 const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (allowed.count(key) != 0) continue;
    std::string list;
    for (const std::string& name : allowed) list += (list.empty() ? "" : ", ") + name;
    return Bad(where, "unknown key \"" + key + "\" (expected " + list + ")");
  }
  return Status::Ok();
}

Status ParseAdapters(const json& value, const std::string& where, std::vector<uint32_t>* out) {
  if (value.is_string() && value.get<std::string>() == "all") return Status::Ok();
  if (!value.is_array() || value.empty()) {
    return Bad(where, "\"adapters\" must be \"all\" or a non-empty list of adapter indices");
  }
  std::set<uint32_t> seen;
  for (const json& item : value) {
    if (!item.is_number_unsigned() || item.get<uint64_t>() > 0xffff) {
      return Bad(where, "adapter index " + item.dump() + " is not a small non-negative integer");
    }
    const uint32_t index = item.get<uint32_t>();
    if (!seen.insert(index).second) {
      return Bad(where, "adapter " + std::to_string(index) + " is listed twice");
    }
    out->push_back(index);
  }
  return Status::Ok();
}

Status ParseQuota(const json& value, const std::string& where, uint64_t* quota) {
  if (value.is_number_unsigned()) {
    *quota = value.get<uint64_t>();
    return Status::Ok();
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (text == "none") {
      *quota = 0;
      return Status::Ok();
    }
    if (adapters::ParseByteSize(text, quota) && *quota != 0) return Status::Ok();
  }
  return Bad(where, "bad \"memory_quota\" " + value.dump() +
                        " (a size such as \"512M\" or \"2G\", a byte count, or \"none\")");
}

Status ParseLimits(const json& value, const std::string& where, SessionLimits* limits) {
  if (!value.is_object()) {
    return Bad(where, "\"limits\" must be an object such as {\"streams\": 256}");
  }
  for (const auto& [name, count] : value.items()) {
    uint64_t* limit = FindLimit(*limits, name);
    if (limit == nullptr) {
      return Bad(where, "unknown limit \"" + name + "\" (expected " + LimitNames() + ")");
    }
    if (!count.is_number_unsigned() || count.get<uint64_t>() == 0) {
      return Bad(where, "limit \"" + name + "\" must be a positive integer, not " + count.dump());
    }
    *limit = count.get<uint64_t>();
  }
  return Status::Ok();
}

StatusOr<ListenerConfig> ParseListener(const json& entry, const std::string& where) {
  if (!entry.is_object()) return Bad(where, "a listener must be an object");
  PVGPU_TRY(
      CheckKeys(entry,
                {"address", "adapters", "memory_quota", "admin", "mode", "limits",
                 "compute_share", "priority"},
                where));
  ListenerConfig listener;
  listener.admin = false;  // container-facing unless the file says otherwise
  listener.mode = kDefaultListenerMode;
  auto address = entry.find("address");
  if (address == entry.end() || !address->is_string()) {
    return Bad(where, "\"address\" (\"unix:PATH\") is required");
  }
  listener.address = address->get<std::string>();
  if (listener.address.rfind("unix:/", 0) != 0) {
    return Bad(where, "address \"" + listener.address +
                          "\" is not supported (expected unix: and an absolute path)");
  }
  if (auto it = entry.find("adapters"); it != entry.end()) {
    PVGPU_TRY(ParseAdapters(*it, where, &listener.adapters));
  }
  if (auto it = entry.find("memory_quota"); it != entry.end()) {
    PVGPU_TRY(ParseQuota(*it, where, &listener.memory_quota));
  }
  if (auto it = entry.find("admin"); it != entry.end()) {
    if (!it->is_boolean()) return Bad(where, "\"admin\" must be true or false");
    listener.admin = it->get<bool>();
  }
  if (auto it = entry.find("limits"); it != entry.end()) {
    PVGPU_TRY(ParseLimits(*it, where, &listener.limits));
  }
  if (auto it = entry.find("compute_share"); it != entry.end()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 ||
        it->get<uint64_t>() > kMaxComputeShare) {
      return Bad(where, "\"compute_share\" must be a positive integer weight (1 to " +
                            std::to_string(kMaxComputeShare) + "), not " + it->dump());
    }
    listener.compute_share = it->get<uint32_t>();
  }
  if (auto it = entry.find("priority"); it != entry.end()) {
    if (!it->is_string() || !ParsePriority(it->get<std::string>(), &listener.high_priority)) {
      return Bad(where, "\"priority\" must be \"high\" or \"normal\", not " + it->dump());
    }
  }
  if (auto it = entry.find("mode"); it != entry.end()) {
    if (!it->is_string() || !ParseSocketMode(it->get<std::string>(), &listener.mode)) {
      return Bad(where, "bad \"mode\" " + it->dump() + " (octal in quotes, e.g. \"0660\")");
    }
  }
  return listener;
}

}  // namespace

bool ParsePriority(const std::string& text, bool* high) {
  if (text == "high") {
    *high = true;
  } else if (text == "normal") {
    *high = false;
  } else {
    return false;
  }
  return true;
}

Status ApplyComputeShares(const std::string& spec, std::vector<ListenerConfig>* device_sockets) {
  auto weight = [](const std::string& text, uint32_t* out) {
    if (text.empty() || text.size() > 7) return false;
    uint64_t value = 0;
    for (char c : text) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    if (value == 0 || value > kMaxComputeShare) return false;
    *out = static_cast<uint32_t>(value);
    return true;
  };
  const std::string usage = "expected a weight N (1 to " + std::to_string(kMaxComputeShare) +
                            ") for every device socket, or NAME=N,... with NAME gpu-<index> "
                            "or all";
  uint32_t all = 0;
  if (weight(spec, &all)) {
    for (ListenerConfig& listener : *device_sockets) listener.compute_share = all;
    return Status::Ok();
  }
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    const size_t eq = item.find('=');
    uint32_t value = 0;
    if (eq == std::string::npos || !weight(item.substr(eq + 1), &value)) {
      return Bad("--compute-share", "bad item '" + item + "' (" + usage + ")");
    }
    const std::string suffix = "/" + item.substr(0, eq) + ".sock";
    bool found = false;
    for (ListenerConfig& listener : *device_sockets) {
      const std::string& a = listener.address;
      if (a.size() >= suffix.size() && a.compare(a.size() - suffix.size(), suffix.size(), suffix) == 0) {
        listener.compute_share = value;
        found = true;
      }
    }
    if (!found) {
      return Bad("--compute-share", "no device socket is named '" + item.substr(0, eq) + "' (" +
                                        usage + ")");
    }
    start = end + 1;
  }
  return Status::Ok();
}

bool ParseSocketMode(const std::string& text, int* mode) {
  if (text.size() < 3 || text.size() > 4) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return false;
    value = value * 8 + (c - '0');
  }
  if (value > 0777) return false;
  *mode = value;
  return true;
}

StatusOr<HostConfig> ParseHostConfig(const std::string& text, const std::string& origin) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& error) {
    return Bad(origin, std::string("not valid JSON: ") + error.what());
  }
  if (!root.is_object()) return Bad(origin, "the top level must be an object");
  PVGPU_TRY(CheckKeys(root, {"adapters", "listeners"}, origin));
  HostConfig config;
  if (auto it = root.find("adapters"); it != root.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      return Bad(origin, "\"adapters\" must be an adapter list such as \"cpu,cpu\"");
    }
    config.adapters = it->get<std::string>();
  }
  if (auto it = root.find("listeners"); it != root.end()) {
    if (!it->is_array()) return Bad(origin, "\"listeners\" must be a list");
    std::set<std::string> addresses;
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string where = origin + ": listeners[" + std::to_string(i) + "]";
      PVGPU_ASSIGN_OR_RETURN(ListenerConfig listener, ParseListener((*it)[i], where));
      if (!addresses.insert(listener.address).second) {
        return Bad(where, "address " + listener.address + " is used by two listeners");
      }
      config.listeners.push_back(std::move(listener));
    }
  }
  return config;
}

StatusOr<HostConfig> LoadHostConfig(const std::string& path) {
  std::ifstream file(path);
  if (!file) return Error(Code::kFileNotFound, "cannot read config file " + path);
  std::stringstream text;
  text << file.rdbuf();
  return ParseHostConfig(text.str(), path);
}

std::vector<ListenerConfig> DeviceSocketListeners(const std::string& dir, size_t adapter_count,
                                                  uint64_t quota, int mode) {
  std::vector<ListenerConfig> out;
  auto make = [&](const std::string& name, std::vector<uint32_t> adapters) {
    ListenerConfig listener;
    listener.address = "unix:" + dir + "/" + name;
    listener.adapters = std::move(adapters);
    listener.memory_quota = quota;
    listener.admin = false;
    listener.mode = mode;
    out.push_back(std::move(listener));
  };
  for (size_t i = 0; i < adapter_count; ++i) {
    make("gpu-" + std::to_string(i) + ".sock", {static_cast<uint32_t>(i)});
  }
  make("all.sock", {});  // empty: every adapter
  return out;
}

Status ValidateListeners(const std::vector<ListenerConfig>& listeners, size_t adapter_count,
                         const std::string& origin) {
  for (const ListenerConfig& listener : listeners) {
    for (uint32_t index : listener.adapters) {
      if (index >= adapter_count) {
        return Bad(origin, "listener " + listener.address + " names adapter " +
                               std::to_string(index) + " but the host has " +
                               std::to_string(adapter_count) + " (indices start at 0)");
      }
    }
  }
  return Status::Ok();
}

Status EnsureSocketDirectory(const std::string& address) {
  std::string path;
  if (!LocalSocketPath(address, &path)) return Status::Ok();  // AddListener reports it
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return Status::Ok();
  const std::string dir = path.substr(0, slash);
  for (size_t next = 1; next != std::string::npos;) {
    next = dir.find('/', next + 1);
    const std::string prefix = dir.substr(0, next);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return Error(Code::kNotPermitted,
                   "cannot create " + prefix + " for " + address + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

}  // namespace pvgpu::host
