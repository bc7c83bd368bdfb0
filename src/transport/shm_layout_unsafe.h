// The bytes that the guest and the host share: the set-up records sent over the Unix socket and
// the layout of the memfd. This file and ring.cc are the only places that reinterpret memory a
// peer can write; everything read from here is validated before use.
//
// memfd layout (all offsets fixed, sizes from the set-up record, checked against fstat):
//   [0, 4096)                        ShmHeader: ring indices, fence, waiter flags, error count
//   [4096, 4096 + g2h)               guest -> host ring data
//   [4096 + g2h, 4096 + g2h + h2g)   host -> guest ring data
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pvgpu::transport::internal {

inline constexpr size_t kHeaderBytes = 4096;
inline constexpr uint64_t kSetupMagic = 0x314843555047'5650ull;  // "PVGPUCH1" little-endian
inline constexpr uint64_t kReplyMagic = 0x3159'4c5052'4750ull;

// A 64-bit index or value alone on its cache line, so the producer's and the consumer's stores
// never share a line.
struct alignas(64) SharedWord {
  uint64_t value;
};

// Counts of threads of one side that are (about to be) asleep on that side's doorbell, by what
// they wait for. The other side rings the doorbell only when the matching count is non-zero, so
// the fast path makes no syscall. A hostile peer can only make us ring more or less often.
struct alignas(64) WaiterFlags {
  uint32_t data;    // in Receive, for the peer to publish a message
  uint32_t space;   // in Send, for the peer to free ring space
  uint32_t fence;   // in WaitFence (guest only)
  uint32_t closed;  // set once by Close; the peer then fails fast without a syscall
};

struct ShmHeader {
  SharedWord g2h_tail;  // written by the guest (producer)
  SharedWord g2h_head;  // written by the host (consumer)
  SharedWord h2g_tail;  // written by the host
  SharedWord h2g_head;  // written by the guest
  SharedWord fence;     // written by the host
  WaiterFlags guest;    // written by the guest
  WaiterFlags host;     // written by the host
  SharedWord errors;    // written by the host: Endpoint::PublishErrorCount
};
static_assert(sizeof(ShmHeader) <= kHeaderBytes);
static_assert(sizeof(SharedWord) == 64 && sizeof(WaiterFlags) == 64);
static_assert(offsetof(ShmHeader, fence) == 256 && offsetof(ShmHeader, host) == 384 &&
              offsetof(ShmHeader, errors) == 448);

// Guest -> host over the socket, with SCM_RIGHTS {memfd, doorbell to host, doorbell to guest}.
struct SetupRequest {
  uint64_t magic;
  uint32_t version;
  uint32_t reserved;
  uint64_t g2h_ring_bytes;
  uint64_t h2g_ring_bytes;
};
static_assert(sizeof(SetupRequest) == 32);

// Host -> guest answer. `reason` is NUL-terminated text for a rejection.
struct SetupReply {
  uint64_t magic;
  uint32_t version;
  uint32_t accepted;  // 1 accept, 0 reject
  char reason[240];
};
static_assert(sizeof(SetupReply) == 256);

// Record tag of a SendFd message on the socket (one byte, one fd attached).
inline constexpr uint8_t kFdTag = 0xFD;

// Atomic access to a word in the mapping. The mapping is page-aligned and the words are at fixed
// 64-byte offsets, which satisfies atomic_ref's alignment requirement.
inline std::atomic_ref<uint64_t> Word(SharedWord& word) {
  return std::atomic_ref<uint64_t>(word.value);
}
inline std::atomic_ref<uint32_t> Flag(uint32_t& flag) { return std::atomic_ref<uint32_t>(flag); }

}  // namespace pvgpu::transport::internal
