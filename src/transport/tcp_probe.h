// The path probe's wire protocol and its host side. A guest that asked for a probe in its
// set-up record (tcp_setup.h) and passed the same checks as any guest (TLS, token) then talks
// plain TCP on the same socket: TLS is left behind once set-up is over, so that what is
// measured is the path itself, between the same two ends a session would use.
//
//   guest -> host: u32 op, u32 zero, u64 count
//     kPing    count 8-byte messages, each echoed by the host before the next
//     kSink    count bytes from the guest; the host answers with 8 bytes once all arrived
//     kSource  count bytes (zeros) from the host
//     anything else ends the probe
//
// The host only echoes, discards or sends zeros, within kProbeLimitMs and kMaxProbe*; the
// unauthenticated bytes after set-up can change a measurement, nothing else.
#pragma once

#include <cstdint>
#include <string>

#include "transport/tcp_stream.h"

namespace pvgpu::transport::internal {

enum ProbeOp : uint32_t { kPing = 1, kSink = 2, kSource = 3 };
struct ProbeCommand {
  uint32_t op;
  uint32_t zero;
  uint64_t count;
};
static_assert(sizeof(ProbeCommand) == 16);

inline constexpr int kProbeLimitMs = 120000;
inline constexpr uint64_t kMaxProbePings = 1000000;
inline constexpr uint64_t kMaxProbeBytes = 64ull << 30;

// Host side, on the set-up thread, after HostSetup said kProbe. Returns when the guest ends
// the probe, breaks its rules, or the time is up.
void ServeProbe(ByteStream& stream, const std::string& who);

}  // namespace pvgpu::transport::internal
