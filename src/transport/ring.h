// Single-producer / single-consumer byte rings in shared memory.
//
// Indices are free-running 64-bit byte counts; the position in the ring is index & (capacity-1).
// Each message is a frame [u32 length][bytes] padded to 8, so a length word never straddles the
// end of the ring, while the bytes may wrap (they are copied in two pieces). Each side keeps its
// own index in a private member and only publishes it; it never reads it back, because the peer
// could overwrite it. The peer's index is validated on every read: a violation is reported as
// kInvalidValue "corrupt ring: ..." and the caller poisons its endpoint. Each side also
// remembers the peer's index as last read and reads it again only when what that allowed is used
// up: the indices' cache lines then cross between cores once per batch rather than once per
// message (64-byte messages one way: 142-163 ns each instead of 188-255 ns in
// transport_channel_benchmark on the project's 2-core VM).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/function_ref.h"
#include "common/status.h"
#include "transport/shm_layout_unsafe.h"

namespace pvgpu::transport::internal {

// Bytes a message of `length` bytes occupies in a ring.
constexpr size_t FrameBytes(size_t length) { return (4 + length + 7) & ~size_t{7}; }

class RingWriter {
 public:
  // `capacity` is a power of two >= 64; `data` spans `capacity` bytes.
  RingWriter(SharedWord* tail, SharedWord* head, uint8_t* data, size_t capacity)
      : tail_word_(tail), head_word_(head), data_(data), capacity_(capacity) {}

  // Free bytes, from the consumer's published head (read now, and remembered); an impossible
  // head is a corrupt ring.
  StatusOr<size_t> FreeBytes();
  // Free bytes as of the head FreeBytes last read: a lower bound that touches no shared memory,
  // so a producer well ahead of the ring's end does not pull the consumer's cache line over
  // for every message.
  size_t KnownFreeBytes() const { return capacity_ - (tail_ - head_seen_); }
  // Copies one frame in and publishes it. The caller checked FreeBytes() >= FrameBytes(total).
  void Write(std::span<const std::span<const uint8_t>> parts, size_t total);
  // Writes one frame of `parts` and then `fill_bytes` that `fill(piece, offset)` writes in
  // place (two pieces when they wrap), and publishes it; when `fill` fails, the frame is not
  // published (its bytes stay in the ring's free space, where the consumer could read but
  // never receives them, and the next frame overwrites them) and `fill`'s error is returned.
  // The caller checked the space as for Write.
  using Fill = FunctionRef<Status(std::span<uint8_t> piece, size_t offset)>;
  Status WriteFilled(std::span<const std::span<const uint8_t>> parts, size_t parts_total,
                     size_t fill_bytes, Fill fill);
  size_t capacity() const { return capacity_; }

 private:
  void CopyIn(uint64_t at, const uint8_t* bytes, size_t size);
  // Writes the length word and `parts` of a frame of `total` bytes; returns where the rest goes.
  uint64_t WriteHead(std::span<const std::span<const uint8_t>> parts, size_t total);
  // Makes a frame of `total` bytes visible to the consumer.
  void Publish(size_t total);

  SharedWord* tail_word_;
  SharedWord* head_word_;
  uint8_t* data_;
  size_t capacity_;
  uint64_t tail_ = 0;       // ours; the shared copy is write-only for us
  uint64_t head_seen_ = 0;  // the consumer's head as last read (validated)
};

class RingReader {
 public:
  RingReader(SharedWord* tail, SharedWord* head, uint8_t* data, size_t capacity, size_t max_message)
      : tail_word_(tail),
        head_word_(head),
        data_(data),
        capacity_(capacity),
        max_message_(max_message) {}

  // True when the producer's published tail is past our head (or is invalid: the next
  // TryRead then reports the corruption). Cheap enough for spin loops.
  bool HasData() const;
  // Takes one message if there is one: true with `out` filled, false when the ring is empty.
  // Frees its space by publishing the new head. The producer's tail is read only when the
  // messages known from the last read are used up.
  StatusOr<bool> TryRead(std::vector<uint8_t>* out);
  // TryRead without the copy: shows the message to `visit` where it lies in the ring (two
  // pieces when it wraps), then frees its space. The producer may rewrite those bytes while
  // `visit` looks; only the frame's length is validated (copied once, as by TryRead).
  StatusOr<bool> TryVisit(
      FunctionRef<void(std::span<const uint8_t> first, std::span<const uint8_t> second)> visit);

 private:
  // The length of the next message, validated: nullopt when the ring is empty.
  StatusOr<std::optional<uint32_t>> NextLength();
  // Frees the frame of a message of `length` bytes at our head.
  void Consume(uint32_t length);

  SharedWord* tail_word_;
  SharedWord* head_word_;
  uint8_t* data_;
  size_t capacity_;
  size_t max_message_;
  uint64_t head_ = 0;       // ours
  uint64_t tail_seen_ = 0;  // the producer's tail as last read (validated)
};

}  // namespace pvgpu::transport::internal
