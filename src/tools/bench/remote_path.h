// The limits of the path to a remote host (tcp:// or tls://), measured in the same run as the
// channel's figures: the raw socket between the same two ends (RemotePathProbe: round trip,
// throughput each way) and, for TLS, one core's rate for the cipher the connection uses. The
// bench prints channel figures as fractions of these.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "transport/channel.h"

namespace pvgpu::tools::bench {

class RemotePath {
 public:
  // Null for a host that is not remote (unix:, a private host).
  static StatusOr<std::unique_ptr<RemotePath>> Open(const std::string& address);

  // Mean microseconds of `count` raw ping-pongs; the best of every call is kept.
  Status MeasureRoundTrip(int count);
  // Raw throughput each way for `bytes`, and for TLS the cipher's one-core rate; the best of
  // every call is kept.
  Status MeasureThroughput(uint64_t bytes);

  double round_trip_us() const { return round_trip_us_; }
  double send_bytes_per_s() const { return send_; }
  double receive_bytes_per_s() const { return receive_; }
  bool tls() const { return !cipher_suite_.empty(); }
  const std::string& cipher_suite() const { return cipher_suite_; }
  double cipher_bytes_per_s() const { return cipher_; }
  // The limit of a copy guest -> host (HtoD) and host -> guest: the raw socket, or the
  // cipher if that is lower.
  double htod_limit() const { return tls() ? std::min(send_, cipher_) : send_; }
  double dtoh_limit() const { return tls() ? std::min(receive_, cipher_) : receive_; }
  // "raw TCP" or "cipher", whichever the limit of that direction is.
  std::string htod_bound() const;
  std::string dtoh_bound() const;

  // What was measured, for a report's JSON and its table.
  nlohmann::ordered_json Json() const;
  std::string Describe() const;

 private:
  RemotePath(std::string address, transport::RemoteOptions options);
  StatusOr<std::unique_ptr<transport::RemotePathProbe>> Connect() const;
  std::string address_;
  transport::RemoteOptions options_;
  std::string security_;
  std::string cipher_suite_;
  double round_trip_us_ = 0;
  double send_ = 0;
  double receive_ = 0;
  double cipher_ = 0;
};

}  // namespace pvgpu::tools::bench
