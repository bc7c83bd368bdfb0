// The remote channel's set-up record: the first exchange after the TCP (and TLS) handshake,
// before any frame. The guest presents the transport version and the shared-secret token; the
// host answers with a verdict and its largest message. A rejected guest never reaches a session.
//
//   guest -> host: "PVGPUTCP", u32 version, u32 token length (<= kMaxTokenBytes), token bytes
//   host -> guest: "PVGPUTCP", u32 SetupResult, u32 max_message_size
// A guest that opens with "PVGPUPRB" instead asks for a path probe (tcp_probe.h): the same
// checks, then plain TCP echo, sink and source instead of a session.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "transport/channel.h"
#include "transport/fd_util.h"
#include "transport/tcp_socket.h"
#include "transport/tcp_stream.h"

namespace pvgpu::transport::internal {

// The remote channel's own transport version (the local channel's is kTransportVersion):
// 2 added the kFenceWanted frame (stream_frames.h).
inline constexpr uint32_t kRemoteTransportVersion = 2;

inline constexpr size_t kMaxTokenBytes = 1024;
inline constexpr size_t kMinTokenBytes = 16;

enum class SetupResult : uint32_t {
  kOk = 0,
  kTokenRejected = 1,
  kVersionMismatch = 2,
  kBadRecord = 3,
  kProbeUnavailable = 4,  // the host cannot serve a probe on this connection (kernel TLS)
};

enum class SetupPurpose { kSession, kProbe };

// Guest side. Returns the host's max_message_size; a refusal is kNotPermitted (token) or
// kNotSupported (version) with a message that says so.
StatusOr<uint32_t> GuestSetup(ByteStream& stream, const std::string& token,
                              const Deadline& deadline,
                              SetupPurpose purpose = SetupPurpose::kSession);

// Host side. `expected_token` empty means no token is required (loopback tcp://). Compares
// tokens in constant time (SHA-256 of each, then CRYPTO_memcmp), answers, and returns
// kNotPermitted / kInvalidValue with the reason when the guest is refused.
// `*purpose` says what the guest asked for; a probe is refused (kNotSupported, and the guest
// told so) when `probe_possible` is false.
Status HostSetup(ByteStream& stream, const std::string& expected_token, uint32_t max_message_size,
                 const Deadline& deadline, SetupPurpose* purpose, bool probe_possible);

// Guest side up to the end of set-up: resolve, connect, TLS, set-up record. The errors say
// what failed, as ConnectRemote documents. Returns the stream and the host's message limit.
struct GuestConnection {
  std::unique_ptr<ByteStream> stream;
  uint32_t max_message_size = 0;
  RemoteAddress remote;
  std::string peer;  // the address connected to
};
StatusOr<GuestConnection> ConnectGuest(const std::string& address, const RemoteOptions& options,
                                       SetupPurpose purpose);

// Reads a token file: its first line, surrounding white space removed; refuses tokens shorter
// than kMinTokenBytes or longer than kMaxTokenBytes.
StatusOr<std::string> ReadTokenFile(const std::string& path);
Status CheckToken(const std::string& token, const std::string& origin);

}  // namespace pvgpu::transport::internal
