// The host daemon's core: adapters, listeners and the sessions they accept.
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/adapter.h"
#include "host/session.h"
#include "host/share_gate.h"
#include "transport/channel.h"

namespace pvgpu::host {

struct ListenerConfig {
  std::string address;              // "unix:/run/pvgpu/pvgpud.sock"
  std::vector<uint32_t> adapters;   // host adapter indices; empty = all
  uint64_t memory_quota = 0;        // per session; 0 = none
  SessionLimits limits;             // per session: objects of each kind
  bool admin = true;                // its sessions may see the whole host (pvgpu smi)
  int mode = 0666;                  // the socket file's permissions
  uint32_t compute_share = 1;       // each session's weight on an adapter (docs/sharing.md)
  bool high_priority = false;       // priority "high": its sessions' work goes first
  transport::RemoteOptions remote;  // tcp:// and tls://: TLS files and token
};

class Server {
 public:
  explicit Server(std::vector<std::unique_ptr<adapters::Adapter>> adapters);
  ~Server();

  // Binds a listener and starts accepting on it.
  Status AddListener(const ListenerConfig& config);
  // Stops accepting, ends every session (cancelling running kernels) and joins all threads.
  void Shutdown();

  const std::vector<std::unique_ptr<adapters::Adapter>>& adapters() const { return adapters_; }
  std::vector<SessionSnapshot> Sessions();
  // The host as `viewer` may see it, as JSON (HostStatus; pvgpu adapters/smi; NVML).
  std::string StatusJson(const SessionPolicy& viewer);
  // Every series of GET /metrics, in the Prometheus text format (metrics.cc, docs/metrics.md).
  std::string MetricsText();

  // What a listener's ended sessions used, and the daemon's totals (metrics, smi).
  struct Totals {
    uint64_t sessions = 0;  // sessions accepted
    uint64_t replies = 0;
    uint64_t faults = 0;
    uint64_t violations = 0;
    FlowUsage usage;
  };

 private:
  struct Listener {
    ListenerConfig config;
    SessionPolicy policy;
    std::unique_ptr<transport::UnixListener> unix;      // unix: addresses
    std::unique_ptr<transport::RemoteListener> remote;  // tcp:// and tls:// addresses
    std::thread thread;
    Totals ended;  // its sessions that have ended, and the count of all (mutex_)
  };
  struct SessionSlot {
    std::unique_ptr<Session> session;
    std::thread thread;
  };

  void AcceptLoop(Listener* listener);
  uint64_t ListenerUse(const SessionPolicy& viewer, const adapters::Adapter* adapter);
  void ReapFinished();  // joins sessions that have ended; mutex_ held
  // Adds an ended session's use to its listener's and adapters' totals; mutex_ held.
  void Retire(const Session& session);
  // The host index of `adapter`, or -1.
  int HostIndex(const adapters::Adapter* adapter) const;

  std::vector<std::unique_ptr<adapters::Adapter>> adapters_;
  // One per adapter: the compute share of its asynchronous contexts' launches.
  std::vector<std::unique_ptr<ShareGate>> gates_;
  std::vector<FlowUsage> adapter_ended_;  // per adapter: what ended sessions used (mutex_)
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::mutex mutex_;
  std::list<SessionSlot> sessions_;
  std::atomic<uint32_t> next_session_id_{1};
  std::atomic<bool> stopping_{false};
  // Utilization is sampled at most once a second per adapter, whoever asks.
  std::mutex utilization_mutex_;
  std::vector<uint32_t> utilization_;
  std::vector<std::chrono::steady_clock::time_point> utilization_time_;
};

}  // namespace pvgpu::host
