#include "host/server.h"

#include "common/log.h"
#include "common/paths.h"

namespace pvgpu::host {

Server::Server(std::vector<std::unique_ptr<adapters::Adapter>> adapters)
    : adapters_(std::move(adapters)), adapter_ended_(adapters_.size()) {
  for (size_t i = 0; i < adapters_.size(); ++i) gates_.push_back(std::make_unique<ShareGate>());
}

int Server::HostIndex(const adapters::Adapter* adapter) const {
  for (size_t i = 0; i < adapters_.size(); ++i) {
    if (adapters_[i].get() == adapter) return static_cast<int>(i);
  }
  return -1;
}

Server::~Server() { Shutdown(); }

Status Server::AddListener(const ListenerConfig& config) {
  auto listener = std::make_unique<Listener>();
  listener->config = config;
  listener->policy.memory_quota = config.memory_quota;
  listener->policy.limits = config.limits;
  listener->policy.listener = config.address;
  listener->policy.server = this;
  listener->policy.admin = config.admin;
  listener->policy.compute_share = config.compute_share == 0 ? 1 : config.compute_share;
  listener->policy.high_priority = config.high_priority;
  if (config.adapters.empty()) {
    for (auto& adapter : adapters_) listener->policy.adapters.push_back(adapter.get());
  } else {
    for (uint32_t index : config.adapters) {
      if (index >= adapters_.size()) {
        return Error(Code::kInvalidValue, "listener " + config.address + " names adapter " +
                                              std::to_string(index) + " but the host has " +
                                              std::to_string(adapters_.size()));
      }
      listener->policy.adapters.push_back(adapters_[index].get());
    }
  }
  for (adapters::Adapter* adapter : listener->policy.adapters) {
    listener->policy.gates.push_back(gates_[HostIndex(adapter)].get());
  }
  std::string path;
  std::string bound;
  if (transport::IsRemoteAddress(config.address)) {
    PVGPU_ASSIGN_OR_RETURN(listener->remote,
                           transport::RemoteListener::Listen(config.address, config.remote));
    bound = listener->remote->address();
  } else if (LocalSocketPath(config.address, &path)) {
    PVGPU_ASSIGN_OR_RETURN(listener->unix, transport::UnixListener::Listen(path, config.mode));
    bound = "unix:" + path;
  } else {
    return Error(Code::kNotSupported, "unsupported listen address '" + config.address +
                                          "' (expected unix:PATH, tls://HOST:PORT or "
                                          "tcp://LOOPBACK:PORT)");
  }
  Listener* raw = listener.get();
  listener->thread = std::thread([this, raw] { AcceptLoop(raw); });
  PVGPU_INFO("listening on " << bound << " (" << raw->policy.adapters.size()
                             << " adapter(s), quota "
                             << (config.memory_quota ? std::to_string(config.memory_quota)
                                                     : std::string("none"))
                             << ", compute share " << listener->policy.compute_share
                             << (config.high_priority ? ", high priority" : "") << ")");
  std::lock_guard<std::mutex> lock(mutex_);
  listeners_.push_back(std::move(listener));
  return Status::Ok();
}

void Server::AcceptLoop(Listener* listener) {
  while (!stopping_.load()) {
    auto endpoint = listener->unix ? listener->unix->Accept() : listener->remote->Accept();
    if (stopping_.load()) break;
    if (!endpoint.ok()) {
      PVGPU_WARN("rejected a guest on " << listener->config.address << ": "
                                        << endpoint.status().ToString());
      continue;
    }
    const uint32_t id = next_session_id_.fetch_add(1);
    auto session = std::make_unique<Session>(id, std::move(endpoint).value(), listener->policy);
    Session* raw = session.get();
    std::lock_guard<std::mutex> lock(mutex_);
    ReapFinished();
    ++listener->ended.sessions;
    sessions_.push_back({std::move(session), std::thread([raw] { raw->Run(); })});
  }
}

void Server::ReapFinished() {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->session->finished()) {
      it->thread.join();
      Retire(*it->session);
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::Retire(const Session& session) {
  const SessionSnapshot s = session.Snapshot();
  for (auto& listener : listeners_) {
    if (listener->config.address != session.policy().listener) continue;
    listener->ended.replies += s.replies;
    listener->ended.faults += s.faults;
    if (!session.violation().empty()) ++listener->ended.violations;
    for (const FlowUsage& usage : s.usage) listener->ended.usage.Add(usage);
  }
  const auto& adapters = session.policy().adapters;
  for (size_t d = 0; d < s.usage.size() && d < adapters.size(); ++d) {
    const int index = HostIndex(adapters[d]);
    if (index >= 0) adapter_ended_[index].Add(s.usage[d]);
  }
}

std::vector<SessionSnapshot> Server::Sessions() {
  std::lock_guard<std::mutex> lock(mutex_);
  ReapFinished();
  std::vector<SessionSnapshot> out;
  for (auto& slot : sessions_) out.push_back(slot.session->Snapshot());
  return out;
}

void Server::Shutdown() {
  if (stopping_.exchange(true)) return;
  std::vector<std::unique_ptr<Listener>> listeners;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    listeners.swap(listeners_);
  }
  for (auto& listener : listeners) {
    if (listener->unix) listener->unix->Shutdown();
    if (listener->remote) listener->remote->Shutdown();
  }
  for (auto& listener : listeners) {
    if (listener->thread.joinable()) listener->thread.join();
  }
  std::list<SessionSlot> sessions;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sessions.swap(sessions_);
  }
  for (auto& slot : sessions) slot.session->Stop();
  for (auto& slot : sessions) slot.thread.join();
  PVGPU_INFO("all sessions ended");
}

}  // namespace pvgpu::host
