#include "host/session_limits.h"

#include <charconv>
#include <sstream>

namespace pvgpu::host {
namespace {

struct Named {
  const char* name;
  uint64_t SessionLimits::*limit;
};
constexpr Named kLimits[] = {
    {"contexts", &SessionLimits::contexts}, {"modules", &SessionLimits::modules},
    {"streams", &SessionLimits::streams},   {"events", &SessionLimits::events},
    {"regions", &SessionLimits::regions},   {"allocations", &SessionLimits::allocations},
    {"uploads", &SessionLimits::uploads},   {"upload_bytes", &SessionLimits::upload_bytes},
    {"arrays", &SessionLimits::arrays},     {"textures", &SessionLimits::textures},
    // Graphs (session_graph.cc).
    {"graph_execs", &SessionLimits::graph_execs}, {"graph_nodes", &SessionLimits::graph_nodes},
    // Virtual memory management (session_vmm.cc).
    {"reservations", &SessionLimits::reservations}, {"physicals", &SessionLimits::physicals},
};

}  // namespace

uint64_t* FindLimit(SessionLimits& limits, const std::string& name) {
  for (const Named& named : kLimits) {
    if (name == named.name) return &(limits.*named.limit);
  }
  return nullptr;
}

std::string LimitNames() {
  std::string names;
  for (const Named& named : kLimits) names += (names.empty() ? "" : ", ") + std::string(named.name);
  return names;
}

Status ParseSessionLimits(const std::string& text, SessionLimits* limits) {
  std::stringstream items(text);
  std::string item;
  SessionLimits parsed = *limits;
  while (std::getline(items, item, ',')) {
    const size_t equals = item.find('=');
    const std::string name = item.substr(0, equals);
    uint64_t* limit = FindLimit(parsed, name);
    if (equals == std::string::npos || limit == nullptr) {
      return Error(
          Code::kInvalidValue,
          "bad limit \"" + item + "\" (expected NAME=COUNT, NAME one of " + LimitNames() + ")");
    }
    const char* first = item.data() + equals + 1;
    const char* last = item.data() + item.size();
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc() || end != last || first == last || value == 0) {
      return Error(Code::kInvalidValue,
                   "bad limit \"" + item + "\" (the count must be a positive integer)");
    }
    *limit = value;
  }
  *limits = parsed;
  return Status::Ok();
}

}  // namespace pvgpu::host
