#include "host/metrics_endpoint.h"

#include <httplib.h>

#include "common/log.h"
#include "host/server.h"

namespace pvgpu::host {

bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  std::string port_text;
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return false;
    }
    *host = address.substr(1, close - 1);
    port_text = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0) return false;
    *host = address.substr(0, colon);
    if (host->find(':') != std::string::npos) return false;  // a v6 address needs brackets
    port_text = address.substr(colon + 1);
  }
  if (port_text.empty() || port_text.size() > 5) return false;
  int value = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value > 65535) return false;
  *port = value;
  return !host->empty();
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const std::string& address,
                                                                  bool allow_remote,
                                                                  Server* server) {
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, &host, &port)) {
    return Error(Code::kInvalidValue, "bad metrics address '" + address +
                                          "' (expected HOST:PORT, e.g. 127.0.0.1:9400)");
  }
  if (!IsLoopbackHost(host) && !allow_remote) {
    return Error(Code::kNotPermitted,
                 "metrics address '" + address +
                     "' is not loopback: the metrics name every session's process and use; "
                     "add --metrics-allow-remote to serve them there (docs/metrics.md)");
  }
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  endpoint->http_ = std::make_unique<httplib::Server>();
  endpoint->http_->Get("/metrics", [server](const httplib::Request&, httplib::Response& response) {
    response.set_content(server->MetricsText(), "text/plain; version=0.0.4; charset=utf-8");
  });
  endpoint->http_->Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("pvgpud: metrics at /metrics\n", "text/plain; charset=utf-8");
  });
  int bound = port;
  if (port == 0) {
    bound = endpoint->http_->bind_to_any_port(host);
    if (bound < 0) bound = 0;
  } else if (!endpoint->http_->bind_to_port(host, port)) {
    bound = 0;
  }
  if (bound == 0) {
    return Error(Code::kNotPermitted, "cannot listen for metrics on " + address);
  }
  endpoint->address_ = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                       std::to_string(bound);
  httplib::Server* http = endpoint->http_.get();
  endpoint->thread_ = std::thread([http] { http->listen_after_bind(); });
  PVGPU_INFO("serving metrics on http://" << endpoint->address_ << "/metrics");
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace pvgpu::host
