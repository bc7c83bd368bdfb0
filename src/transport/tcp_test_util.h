// Helpers for the remote channel's tests: a connected guest/host pair over a real loopback
// listener, and a fake host that passes set-up and then misbehaves (silence, garbage).
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/channel.h"

namespace pvgpu::transport::testing {

struct RemotePair {
  std::unique_ptr<RemoteListener> listener;
  std::unique_ptr<Endpoint> guest;
  std::unique_ptr<Endpoint> host;
};
// Listens on `listen_address` (port 0), connects a guest to the bound address with `guest`
// options (address rewritten to `connect_host` when non-empty), and accepts it. Nulls (with
// ADD_FAILURE) on error.
RemotePair ConnectPair(const std::string& listen_address, const RemoteOptions& host,
                       const RemoteOptions& guest, const std::string& connect_host = "");

// A plain-TCP "host" on 127.0.0.1 that answers the guest's set-up record with OK, then writes
// `after_setup` and goes silent, keeping the connection open, like a host behind a cut cable.
class FakeHost {
 public:
  explicit FakeHost(std::vector<uint8_t> after_setup);
  ~FakeHost();
  std::string address() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

 private:
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

std::string TestToken();  // 32 characters

}  // namespace pvgpu::transport::testing
