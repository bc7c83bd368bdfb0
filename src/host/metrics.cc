// GET /metrics: the daemon, its adapters, listeners and sessions in the Prometheus text
// exposition format (version 0.0.4). docs/metrics.md lists every series.
#include <algorithm>
#include <map>
#include <sstream>

#include "common/uuid.h"
#include "host/server.h"
#include "host/version.h"
#include "ptx/jit.h"

namespace pvgpu::host {
namespace {

// A label value with backslash, double quote and line feed escaped, as the format requires.
std::string Escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Seconds(uint64_t ns) {
  std::ostringstream os;
  os.precision(9);
  os << std::fixed << static_cast<double>(ns) / 1e9;
  return os.str();
}

// One metric family: its HELP and TYPE once, then its samples.
class Family {
 public:
  Family(std::ostringstream& out, const char* name, const char* type, const char* help)
      : out_(out), name_(name) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  }
  void Sample(const std::string& labels, const std::string& value) {
    out_ << name_;
    if (!labels.empty()) out_ << "{" << labels << "}";
    out_ << " " << value << "\n";
  }
  void Sample(const std::string& labels, uint64_t value) {
    Sample(labels, std::to_string(value));
  }

 private:
  std::ostringstream& out_;
  const char* name_;
};

std::string Label(const char* name, const std::string& value) {
  return std::string(name) + "=\"" + Escape(value) + "\"";
}

}  // namespace

std::string Server::MetricsText() {
  struct SessionRow {
    SessionSnapshot snapshot;
    std::string listener;
    std::vector<int> adapters;  // host index of each policy adapter
  };
  std::vector<SessionRow> rows;
  struct ListenerRow {
    std::string address;
    uint32_t share = 1;
    bool high = false;
    Totals totals;  // ended sessions, then the live ones added
    uint64_t active = 0;
    uint64_t memory_used = 0;
  };
  std::vector<ListenerRow> listener_rows;
  std::vector<FlowUsage> adapter_usage;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ReapFinished();
    adapter_usage = adapter_ended_;
    for (auto& listener : listeners_) {
      listener_rows.push_back({listener->config.address, listener->policy.compute_share,
                               listener->policy.high_priority, listener->ended, 0, 0});
    }
    for (auto& slot : sessions_) {
      SessionRow row{slot.session->Snapshot(), slot.session->policy().listener, {}};
      for (const adapters::Adapter* adapter : slot.session->policy().adapters) {
        row.adapters.push_back(HostIndex(adapter));
      }
      rows.push_back(std::move(row));
    }
  }
  Totals daemon;
  for (ListenerRow& l : listener_rows) {
    for (const SessionRow& row : rows) {
      if (row.listener != l.address) continue;
      ++l.active;
      l.memory_used += row.snapshot.used_bytes;
      l.totals.replies += row.snapshot.replies;
      l.totals.faults += row.snapshot.faults;
      for (const FlowUsage& usage : row.snapshot.usage) l.totals.usage.Add(usage);
    }
    daemon.sessions += l.totals.sessions;
    daemon.replies += l.totals.replies;
    daemon.faults += l.totals.faults;
    daemon.violations += l.totals.violations;
  }
  for (const SessionRow& row : rows) {
    for (size_t d = 0; d < row.snapshot.usage.size() && d < row.adapters.size(); ++d) {
      if (row.adapters[d] >= 0) adapter_usage[row.adapters[d]].Add(row.snapshot.usage[d]);
    }
  }

  std::ostringstream out;
  {
    Family f(out, "pvgpu_build_info", "gauge", "The daemon's version (always 1).");
    f.Sample(Label("version", kVersionString), 1);
  }
  {
    Family f(out, "pvgpu_sessions", "gauge", "Guest sessions connected now.");
    f.Sample("", rows.size());
  }
  {
    Family f(out, "pvgpu_sessions_started_total", "counter", "Guest sessions accepted.");
    f.Sample("", daemon.sessions);
  }
  {
    Family f(out, "pvgpu_channel_round_trips_total", "counter",
             "Guest messages the daemon answered (each a channel round trip).");
    f.Sample("", daemon.replies);
  }
  {
    Family f(out, "pvgpu_protocol_violations_total", "counter",
             "Sessions ended for breaking the protocol.");
    f.Sample("", daemon.violations);
  }
  {
    // The cpu adapters' compiling engine (docs/jit.md): where kernels' code came from.
    const ptx::JitTotals jit = ptx::GetJitTotals();
    Family f(out, "pvgpu_jit_kernels_total", "counter",
             "Kernels given compiled code, by origin: compiled by LLVM, shared with a live "
             "copy, or loaded from the disk cache.");
    f.Sample(Label("origin", "compiled"), jit.compiled);
    f.Sample(Label("origin", "memory"), jit.memory_hits);
    f.Sample(Label("origin", "disk"), jit.disk_hits);
    Family failed(out, "pvgpu_jit_failures_total", "counter",
                  "Kernels left to the interpreter because their compilation failed.");
    failed.Sample("", jit.failed);
    Family seconds(out, "pvgpu_jit_compile_seconds_total", "counter",
                   "Time spent getting kernels' compiled code, whatever its origin.");
    seconds.Sample("", Seconds(static_cast<uint64_t>(jit.compile_ms * 1e6)));
  }

  auto adapter_label = [this](size_t i) {
    return Label("adapter", std::to_string(i)) + "," + Label("kind", adapters_[i]->info().kind);
  };
  {
    Family f(out, "pvgpu_adapter_info", "gauge",
             "An adapter the daemon serves (always 1): its name, UUID and engine.");
    for (size_t i = 0; i < adapters_.size(); ++i) {
      const adapters::AdapterInfo& info = adapters_[i]->info();
      f.Sample(adapter_label(i) + "," + Label("name", info.name) + "," +
                   Label("uuid", FormatUuid(info.uuid.data())) + "," +
                   Label("engine", info.engine),
               1);
    }
  }
  {
    Family f(out, "pvgpu_adapter_memory_total_bytes", "gauge", "Device memory the adapter offers.");
    for (size_t i = 0; i < adapters_.size(); ++i) {
      f.Sample(adapter_label(i), adapters_[i]->info().total_memory);
    }
  }
  {
    Family f(out, "pvgpu_adapter_memory_used_bytes", "gauge",
             "Device memory all sessions hold on the adapter.");
    for (size_t i = 0; i < adapters_.size(); ++i) {
      f.Sample(adapter_label(i), adapters_[i]->used_bytes());
    }
  }
  {
    Family f(out, "pvgpu_adapter_busy_seconds_total", "counter",
             "Time during which at least one kernel ran on the adapter.");
    for (size_t i = 0; i < adapters_.size(); ++i) {
      f.Sample(adapter_label(i), Seconds(std::max(adapters_[i]->busy_ns(), gates_[i]->busy_ns())));
    }
  }
  {
    Family f(out, "pvgpu_adapter_kernels_total", "counter", "Kernels run on the adapter.");
    for (size_t i = 0; i < adapters_.size(); ++i) f.Sample(adapter_label(i), adapter_usage[i].kernels);
  }

  auto listener_label = [](const ListenerRow& l) { return Label("listener", l.address); };
  auto per_listener = [&](const char* name, const char* type, const char* help, auto value) {
    Family f(out, name, type, help);
    for (const ListenerRow& l : listener_rows) f.Sample(listener_label(l), value(l));
  };
  per_listener("pvgpu_listener_compute_share", "gauge",
               "The weight of each of the listener's sessions on an adapter.",
               [](const ListenerRow& l) { return uint64_t{l.share}; });
  per_listener("pvgpu_listener_high_priority", "gauge",
               "1 when the listener's sessions have high priority.",
               [](const ListenerRow& l) { return uint64_t{l.high ? 1u : 0u}; });
  per_listener("pvgpu_listener_sessions", "gauge", "The listener's sessions connected now.",
               [](const ListenerRow& l) { return l.active; });
  per_listener("pvgpu_listener_sessions_started_total", "counter",
               "Sessions the listener accepted.",
               [](const ListenerRow& l) { return l.totals.sessions; });
  per_listener("pvgpu_listener_memory_used_bytes", "gauge",
               "Device memory the listener's sessions hold now.",
               [](const ListenerRow& l) { return l.memory_used; });
  per_listener("pvgpu_listener_kernels_total", "counter", "Kernels the listener's sessions ran.",
               [](const ListenerRow& l) { return l.totals.usage.kernels; });
  {
    Family f(out, "pvgpu_listener_busy_seconds_total", "counter",
             "Time the listener's sessions' kernels ran (summed over sessions).");
    for (const ListenerRow& l : listener_rows) {
      f.Sample(listener_label(l), Seconds(l.totals.usage.busy_ns));
    }
  }
  {
    Family f(out, "pvgpu_listener_queued_seconds_total", "counter",
             "Time the listener's sessions' launches waited for their share of an adapter.");
    for (const ListenerRow& l : listener_rows) {
      f.Sample(listener_label(l), Seconds(l.totals.usage.queued_ns));
    }
  }
  {
    Family f(out, "pvgpu_listener_copied_bytes_total", "counter",
             "Bytes the listener's sessions copied, by direction.");
    for (const ListenerRow& l : listener_rows) {
      f.Sample(listener_label(l) + ",direction=\"htod\"", l.totals.usage.bytes_htod);
      f.Sample(listener_label(l) + ",direction=\"dtoh\"", l.totals.usage.bytes_dtoh);
    }
  }
  per_listener("pvgpu_listener_faults_total", "counter",
               "Failures the listener's sessions' work recorded as context errors.",
               [](const ListenerRow& l) { return l.totals.faults; });
  per_listener("pvgpu_listener_protocol_violations_total", "counter",
               "The listener's sessions ended for breaking the protocol.",
               [](const ListenerRow& l) { return l.totals.violations; });

  auto session_label = [](const SessionRow& row) {
    return Label("session", std::to_string(row.snapshot.id)) + "," +
           Label("pid", std::to_string(row.snapshot.guest_pid)) + "," +
           Label("name", row.snapshot.guest_name) + "," + Label("listener", row.listener);
  };
  {
    Family f(out, "pvgpu_session_memory_used_bytes", "gauge", "Device memory the session holds.");
    for (const SessionRow& row : rows) f.Sample(session_label(row), row.snapshot.used_bytes);
  }
  {
    Family f(out, "pvgpu_session_compute_share", "gauge", "The session's weight on an adapter.");
    for (const SessionRow& row : rows) f.Sample(session_label(row), row.snapshot.compute_share);
  }
  {
    Family f(out, "pvgpu_session_faults_total", "counter",
             "Failures the session's work recorded as context errors.");
    for (const SessionRow& row : rows) f.Sample(session_label(row), row.snapshot.faults);
  }
  {
    Family f(out, "pvgpu_session_round_trips_total", "counter",
             "The session's messages the daemon answered.");
    for (const SessionRow& row : rows) f.Sample(session_label(row), row.snapshot.replies);
  }
  auto per_flow = [&](const char* name, const char* help, auto value) {
    Family f(out, name, "counter", help);
    for (const SessionRow& row : rows) {
      for (size_t d = 0; d < row.snapshot.usage.size() && d < row.adapters.size(); ++d) {
        value(f, session_label(row) + "," + Label("adapter", std::to_string(row.adapters[d])),
              row.snapshot.usage[d]);
      }
    }
  };
  per_flow("pvgpu_session_kernels_total", "Kernels the session ran on the adapter.",
           [](Family& f, const std::string& labels, const FlowUsage& u) {
             f.Sample(labels, u.kernels);
           });
  per_flow("pvgpu_session_busy_seconds_total", "Time the session's kernels ran on the adapter.",
           [](Family& f, const std::string& labels, const FlowUsage& u) {
             f.Sample(labels, Seconds(u.busy_ns));
           });
  per_flow("pvgpu_session_queued_seconds_total",
           "Time the session's launches waited for their share of the adapter.",
           [](Family& f, const std::string& labels, const FlowUsage& u) {
             f.Sample(labels, Seconds(u.queued_ns));
           });
  per_flow("pvgpu_session_worker_seconds_total",
           "cpu adapter: worker time the session's kernels' blocks took.",
           [](Family& f, const std::string& labels, const FlowUsage& u) {
             f.Sample(labels, Seconds(u.worker_ns));
           });
  per_flow("pvgpu_session_copied_bytes_total", "Bytes the session copied, by direction.",
           [](Family& f, const std::string& labels, const FlowUsage& u) {
             f.Sample(labels + ",direction=\"htod\"", u.bytes_htod);
             f.Sample(labels + ",direction=\"dtoh\"", u.bytes_dtoh);
           });
  return out.str();
}

}  // namespace pvgpu::host
