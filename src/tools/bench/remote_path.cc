#include "tools/bench/remote_path.h"

#include <algorithm>
#include <cmath>

#include "tools/bench/report.h"

namespace pvgpu::tools::bench {

StatusOr<std::unique_ptr<RemotePath>> RemotePath::Open(const std::string& address) {
  if (!transport::IsRemoteAddress(address)) return std::unique_ptr<RemotePath>();
  // The same token and CA as the guest library uses (PVGPU_TOKEN_FILE, PVGPU_TLS_CA).
  PVGPU_ASSIGN_OR_RETURN(transport::RemoteOptions options,
                         transport::GuestRemoteOptionsFromEnvironment());
  auto path = std::unique_ptr<RemotePath>(new RemotePath(address, std::move(options)));
  PVGPU_ASSIGN_OR_RETURN(auto probe, path->Connect());
  path->security_ = probe->security();
  path->cipher_suite_ = path->security_.substr(0, path->security_.find(','));
  return path;
}

RemotePath::RemotePath(std::string address, transport::RemoteOptions options)
    : address_(std::move(address)), options_(std::move(options)) {}

// A connection for each measurement: the host serves one probe connection for a bounded time
// (transport::internal::kProbeLimitMs), which a whole benchmark over a slow link outlasts.
StatusOr<std::unique_ptr<transport::RemotePathProbe>> RemotePath::Connect() const {
  auto probe = transport::RemotePathProbe::Connect(address_, options_);
  if (!probe.ok()) {
    return Error(probe.status().code(),
                 "cannot measure the path to " + address_ + ": " + probe.status().message());
  }
  return probe;
}

Status RemotePath::MeasureRoundTrip(int count) {
  PVGPU_ASSIGN_OR_RETURN(auto probe, Connect());
  PVGPU_ASSIGN_OR_RETURN(double us, probe->RoundTripMicros(count));
  round_trip_us_ = round_trip_us_ == 0 ? us : std::min(round_trip_us_, us);
  return Status::Ok();
}

Status RemotePath::MeasureThroughput(uint64_t bytes) {
  PVGPU_ASSIGN_OR_RETURN(auto probe, Connect());
  PVGPU_ASSIGN_OR_RETURN(double send, probe->SendBytesPerSecond(bytes));
  PVGPU_ASSIGN_OR_RETURN(double receive, probe->ReceiveBytesPerSecond(bytes));
  send_ = std::max(send_, send);
  receive_ = std::max(receive_, receive);
  if (tls()) {
    PVGPU_ASSIGN_OR_RETURN(double cipher,
                           transport::RemotePathProbe::CipherBytesPerSecond(cipher_suite_, 0.5));
    cipher_ = std::max(cipher_, cipher);
  }
  return Status::Ok();
}

std::string RemotePath::htod_bound() const {
  return tls() && cipher_ < send_ ? "cipher" : "raw TCP";
}
std::string RemotePath::dtoh_bound() const {
  return tls() && cipher_ < receive_ ? "cipher" : "raw TCP";
}

nlohmann::ordered_json RemotePath::Json() const {
  nlohmann::ordered_json json{{"address", address_}, {"security", security_}};
  auto or_null = [](double v) { return v > 0 ? nlohmann::ordered_json(v) : nullptr; };
  json["raw_round_trip_us"] = or_null(round_trip_us_);
  json["raw_send_gbps"] = or_null(send_ / 1e9);
  json["raw_receive_gbps"] = or_null(receive_ / 1e9);
  json["cipher"] = tls() ? nlohmann::ordered_json(cipher_suite_) : nullptr;
  json["cipher_one_core_gbps"] = tls() ? or_null(cipher_ / 1e9) : nullptr;
  return json;
}

std::string RemotePath::Describe() const {
  std::string out = "path to " + address_ + " (a plain TCP connection between the same two ends";
  out += tls() ? "; the channel's TLS: " + security_ + ")" : ")";
  out += ":";
  if (round_trip_us_ > 0) out += " round trip " + FormatNumber(round_trip_us_) + " us;";
  if (send_ > 0) {
    out += " raw TCP " + FormatNumber(send_ / 1e9) + " GB/s to the host, " +
           FormatNumber(receive_ / 1e9) + " GB/s from it;";
  }
  if (tls() && cipher_ > 0) {
    out += " " + cipher_suite_ + " on one core " + FormatNumber(cipher_ / 1e9) + " GB/s;";
  }
  out.back() = '\n';
  return out;
}

}  // namespace pvgpu::tools::bench
