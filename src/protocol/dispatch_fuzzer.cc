// libFuzzer target for everything on the host that reads a guest's channel bytes: the session
// loop (header checks, protocol::Dispatch, every Execute handler and its validation, a real
// cpu adapter underneath) and ModuleDescription::Decode. The daemon side must never crash,
// whatever arrives; ASan and UBSan turn any memory or arithmetic error into a crash.
//
// Input: one mode byte, then messages as [u16 length, little-endian][length bytes] records,
// each record being one whole channel message (header + body), up to kMaxMessages.
//   mode bit 0: rewrite each header's seq to the next one in order, so that fuzzing reaches
//               past the seq check into the handlers instead of dying there every time;
//   mode bit 1: send a well-formed Hello first, for the same reason;
//   mode bit 2: also run protocol::Dispatch alone (a handler that accepts everything, its
//               handles resolving by parity), TraceRequest and ModuleDescription::Decode over
//               each record.
// Seeds: tests/fuzz/protocol/ (made by tests/fuzz/protocol/make_seeds.py); see docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <sstream>
#include <thread>
#include <vector>

#include "adapters/registry.h"
#include "common/log.h"
#include "host/session.h"
#include "protocol/wire.h"
#include "transport/channel.h"

namespace {

using pvgpu::Code;
namespace protocol = pvgpu::protocol;

constexpr size_t kMaxMessages = 64;

// Accepts every request: exercises Dispatch's size and direction checks and Invoke's handle
// resolution on their own. Odd handles name nothing, so both outcomes of every lookup run.
struct AcceptAll {
  using Result = Code;
  struct Object {};
  Object object;
  template <protocol::HandleKind K, typename... Scope>
  Object* Find(protocol::HandleTag<K>, uint64_t id, Scope&...) {
    return id % 2 == 0 ? &object : nullptr;
  }
  template <protocol::HandleKind K, typename... Scope>
  bool Fresh(protocol::HandleTag<K>, uint64_t id, Scope&...) {
    return id != 0 && id % 2 == 1;
  }
  template <typename Request, typename... Scope>
  Code Unknown(const Request&, protocol::HandleKind, uint64_t, Scope&...) {
    return Code::kInvalidHandle;
  }
  template <typename Request>
  Code Taken(const Request&, protocol::HandleKind, uint64_t) {
    return Code::kInvalidHandle;
  }
  Code Fault(Object&) { return Code::kOk; }
  template <typename Request>
  Code Answer(const Request&, Code code) {
    return code;
  }
  template <typename Request, typename... Objects>
  Code Handle(const Request&, std::span<const uint8_t>, Objects&&...) {
    return Code::kOk;
  }
};

// One cpu adapter for the whole run, small so that allocations near its limit are reachable.
pvgpu::adapters::Adapter* CpuAdapter() {
  static std::vector<std::unique_ptr<pvgpu::adapters::Adapter>>* adapters = [] {
    pvgpu::log::Init("dispatch_fuzzer", pvgpu::log::Level::kError);
    pvgpu::adapters::RegistryOptions options;
    options.cpu_threads = 1;
    auto created = pvgpu::adapters::CreateAdapters("cpu:memory=64M", options);
    if (!created.ok()) __builtin_trap();
    return new std::vector<std::unique_ptr<pvgpu::adapters::Adapter>>(std::move(created).value());
  }();
  return (*adapters)[0].get();
}

std::vector<std::vector<uint8_t>> SplitRecords(std::span<const uint8_t> bytes) {
  std::vector<std::vector<uint8_t>> records;
  while (bytes.size() >= 2 && records.size() < kMaxMessages) {
    const size_t length = std::min<size_t>(bytes[0] | (bytes[1] << 8), bytes.size() - 2);
    records.emplace_back(bytes.begin() + 2, bytes.begin() + 2 + length);
    bytes = bytes.subspan(2 + length);
  }
  return records;
}

std::vector<uint8_t> HelloMessage() {
  protocol::MessageHeader header;
  header.op = static_cast<uint32_t>(protocol::Op::kHello);
  header.seq = 1;
  protocol::HelloRequest hello;
  hello.protocol_version = protocol::kProtocolVersion;
  std::strncpy(hello.guest_name, "fuzzer", sizeof(hello.guest_name) - 1);
  std::vector<uint8_t> message(sizeof(header) + sizeof(hello));
  std::memcpy(message.data(), &header, sizeof(header));
  std::memcpy(message.data() + sizeof(header), &hello, sizeof(hello));
  return message;
}

void RunSession(std::vector<std::vector<uint8_t>> messages, bool fix_seq) {
  auto [guest, host] = pvgpu::transport::CreateInProcessPair(1u << 20);
  pvgpu::host::SessionPolicy policy;
  policy.adapters = {CpuAdapter()};
  policy.memory_quota = 16u << 20;
  // Small limits, so that refusals and the ends of guests that ignore them are reachable.
  policy.limits = {4, 4, 4, 4, 4, 64};
  policy.listener = "fuzz";
  pvgpu::host::Session session(1, std::move(host), policy);
  std::thread serve([&session] { session.Run(); });
  uint64_t seq = 0;
  for (auto& message : messages) {
    if (fix_seq && message.size() >= sizeof(protocol::MessageHeader)) {
      ++seq;
      std::memcpy(message.data() + offsetof(protocol::MessageHeader, seq), &seq, sizeof(seq));
    }
    if (!guest->Send(message).ok()) break;
  }
  // Ends the session however far it got (a real guest may vanish at any point too).
  guest->Close();
  serve.join();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::vector<std::vector<uint8_t>> records = SplitRecords({data + 1, size - 1});

  if ((mode & 4) != 0) {
    for (const auto& record : records) {
      protocol::ModuleDescription description;
      (void)description.Decode(record);
      if (record.size() < sizeof(protocol::MessageHeader)) continue;
      protocol::MessageHeader header;
      std::memcpy(&header, record.data(), sizeof(header));
      AcceptAll handler;
      Code result = Code::kOk;
      const auto body = std::span<const uint8_t>(record).subspan(sizeof(header));
      (void)protocol::Dispatch(handler, header.op, body, &result);
      std::ostringstream trace;
      (void)protocol::TraceRequest(trace, header.op, body);
    }
  }
  if ((mode & 2) != 0) records.insert(records.begin(), HelloMessage());
  RunSession(std::move(records), (mode & 1) != 0);
  return 0;
}
