// pvgpud --metrics-listen ADDR:PORT: GET /metrics over HTTP (cpp-httplib, Debian's
// libcpp-httplib-dev), answered from Server::MetricsText. docs/metrics.md.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace httplib {
class Server;
}

namespace pvgpu::host {

class Server;

class MetricsEndpoint {
 public:
  // Binds ADDR:PORT ("127.0.0.1:9400", "[::1]:9400"; port 0 picks one) and serves on a
  // thread of its own. An address other than loopback is refused unless `allow_remote`.
  static StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const std::string& address,
                                                          bool allow_remote, Server* server);
  ~MetricsEndpoint();  // stops serving and joins the thread
  // "127.0.0.1:9400", with the port bound.
  const std::string& address() const { return address_; }

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  std::string address_;
};

// Splits "HOST:PORT" or "[V6]:PORT"; false when malformed.
bool SplitHostPort(const std::string& address, std::string* host, int* port);
// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHost(const std::string& host);

}  // namespace pvgpu::host
