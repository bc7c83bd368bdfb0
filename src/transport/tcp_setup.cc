#include "transport/tcp_setup.h"

#include <cstring>
#include <fstream>

#include "transport/channel.h"

namespace pvgpu::transport::internal {
namespace {

constexpr char kMagic[8] = {'P', 'V', 'G', 'P', 'U', 'T', 'C', 'P'};
constexpr char kProbeMagic[8] = {'P', 'V', 'G', 'P', 'U', 'P', 'R', 'B'};

struct GuestRecord {
  char magic[8];
  uint32_t version;
  uint32_t token_length;
};
struct HostRecord {
  char magic[8];
  uint32_t result;
  uint32_t max_message_size;
};
static_assert(sizeof(GuestRecord) == 16 && sizeof(HostRecord) == 16);

std::span<const uint8_t> Bytes(const void* data, size_t size) {
  return {static_cast<const uint8_t*>(data), size};
}

// Compares in time that depends only on the expected token's length (the host's own secret),
// never on where the presented one first differs or how long it is.
bool TokensEqual(const std::string& presented, const std::string& expected) {
  unsigned diff = presented.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char p = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff |= p ^ static_cast<unsigned char>(expected[i]);
  }
  // Keeps the compiler from turning the loop into an early-exit comparison.
  asm volatile("" : "+r"(diff));
  return diff == 0;
}

}  // namespace

StatusOr<uint32_t> GuestSetup(ByteStream& stream, const std::string& token,
                              const Deadline& deadline, SetupPurpose purpose) {
  GuestRecord record{};
  std::memcpy(record.magic, purpose == SetupPurpose::kProbe ? kProbeMagic : kMagic, sizeof(kMagic));
  record.version = kRemoteTransportVersion;
  record.token_length = static_cast<uint32_t>(token.size());
  std::vector<uint8_t> bytes(sizeof(record) + token.size());
  std::memcpy(bytes.data(), &record, sizeof(record));
  std::memcpy(bytes.data() + sizeof(record), token.data(), token.size());
  PVGPU_TRY(WriteAll(stream, bytes, deadline));
  HostRecord reply{};
  Status read = ReadExact(stream, {reinterpret_cast<uint8_t*>(&reply), sizeof(reply)}, deadline);
  if (!read.ok()) {
    return Error(read.code() == Code::kNotReady ? Code::kNotReady : Code::kDeviceUnavailable,
                 "the host ended the connection during set-up (" + read.message() +
                     "); a tls:// listener drops plain tcp:// guests");
  }
  if (std::memcmp(reply.magic, kMagic, sizeof(kMagic)) != 0) {
    return Error(Code::kInvalidValue, "the peer is not a pvgpu host (bad set-up answer)");
  }
  switch (static_cast<SetupResult>(reply.result)) {
    case SetupResult::kOk:
      break;
    case SetupResult::kTokenRejected:
      return Error(Code::kNotPermitted,
                   "token rejected by the host (check PVGPU_TOKEN_FILE or PVGPU_TOKEN)");
    case SetupResult::kVersionMismatch:
      return Error(Code::kNotSupported, "the host speaks another transport version");
    case SetupResult::kProbeUnavailable:
      return Error(Code::kNotSupported,
                   "the host cannot serve a path probe on this connection (kernel TLS)");
    default:
      return Error(Code::kInvalidValue, "the host refused the set-up record (result " +
                                            std::to_string(reply.result) + ")");
  }
  if (reply.max_message_size < (64u << 10)) {
    return Error(Code::kInvalidValue, "the host's message limit is implausibly small");
  }
  return reply.max_message_size;
}

Status HostSetup(ByteStream& stream, const std::string& expected_token, uint32_t max_message_size,
                 const Deadline& deadline, SetupPurpose* purpose, bool probe_possible) {
  GuestRecord record{};
  PVGPU_TRY(ReadExact(stream, {reinterpret_cast<uint8_t*>(&record), sizeof(record)}, deadline));
  HostRecord reply{};
  std::memcpy(reply.magic, kMagic, sizeof(kMagic));
  reply.max_message_size = max_message_size;
  auto refuse = [&](SetupResult result, Code code, const std::string& reason) {
    reply.result = static_cast<uint32_t>(result);
    (void)WriteAll(stream, Bytes(&reply, sizeof(reply)), deadline);
    return Error(code, reason);
  };
  const bool probe = std::memcmp(record.magic, kProbeMagic, sizeof(kProbeMagic)) == 0;
  if (!probe && std::memcmp(record.magic, kMagic, sizeof(kMagic)) != 0) {
    return refuse(SetupResult::kBadRecord, Code::kInvalidValue,
                  "not a pvgpu set-up record (a TLS guest on a tcp:// listener?)");
  }
  *purpose = probe ? SetupPurpose::kProbe : SetupPurpose::kSession;
  if (record.version != kRemoteTransportVersion) {
    return refuse(SetupResult::kVersionMismatch, Code::kNotSupported,
                  "transport version " + std::to_string(record.version) + ", expected " +
                      std::to_string(kRemoteTransportVersion));
  }
  if (record.token_length > kMaxTokenBytes) {
    return refuse(SetupResult::kBadRecord, Code::kInvalidValue, "token longer than allowed");
  }
  std::string token(record.token_length, '\0');
  PVGPU_TRY(ReadExact(stream, {reinterpret_cast<uint8_t*>(token.data()), token.size()}, deadline));
  if (!expected_token.empty() && !TokensEqual(token, expected_token)) {
    return refuse(SetupResult::kTokenRejected, Code::kNotPermitted, "token rejected");
  }
  if (probe && !probe_possible) {
    return refuse(SetupResult::kProbeUnavailable, Code::kNotSupported,
                  "path probe asked for on a kernel TLS connection");
  }
  reply.result = static_cast<uint32_t>(SetupResult::kOk);
  return WriteAll(stream, Bytes(&reply, sizeof(reply)), deadline);
}

Status CheckToken(const std::string& token, const std::string& origin) {
  if (token.size() < kMinTokenBytes) {
    return Error(Code::kInvalidValue, "the token from " + origin + " is shorter than " +
                                          std::to_string(kMinTokenBytes) +
                                          " characters (try: openssl rand -hex 32)");
  }
  if (token.size() > kMaxTokenBytes) {
    return Error(Code::kInvalidValue, "the token from " + origin + " is longer than " +
                                          std::to_string(kMaxTokenBytes) + " bytes");
  }
  return Status::Ok();
}

StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(Code::kInvalidValue, "cannot read token file '" + path + "'");
  std::string token;
  std::getline(in, token);
  const size_t first = token.find_first_not_of(" \t\r");
  const size_t last = token.find_last_not_of(" \t\r");
  token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
  PVGPU_TRY(CheckToken(token, "'" + path + "'"));
  return token;
}

}  // namespace pvgpu::transport::internal
