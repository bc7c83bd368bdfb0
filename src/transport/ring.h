// Single-producer / single-consumer byte rings in shared memory.
//
// Indices are free-running 64-bit byte counts; the position in the ring is index & (capacity-1).
// Each message is a frame [u32 length][bytes] padded to 8, so a length word never straddles the
// end of the ring, while the bytes may wrap (they are copied in two pieces). Each side keeps its
// own index in a private member and only publishes it; it never reads it back, because the peer
// could overwrite it. The peer's index is validated on every read: a violation is reported as
// kInvalidValue "corrupt ring: ..." and the caller poisons its endpoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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

  // Free bytes, from the consumer's published head; an impossible head is a corrupt ring.
  StatusOr<size_t> FreeBytes() const;
  // Copies one frame in and publishes it. The caller checked FreeBytes() >= FrameBytes(total).
  void Write(std::span<const std::span<const uint8_t>> parts, size_t total);
  size_t capacity() const { return capacity_; }

 private:
  void CopyIn(uint64_t at, const uint8_t* bytes, size_t size);

  SharedWord* tail_word_;
  SharedWord* head_word_;
  uint8_t* data_;
  size_t capacity_;
  uint64_t tail_ = 0;  // ours; the shared copy is write-only for us
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
  // Frees its space by publishing the new head.
  StatusOr<bool> TryRead(std::vector<uint8_t>* out);

 private:
  void CopyOut(uint64_t at, uint8_t* bytes, size_t size) const;

  SharedWord* tail_word_;
  SharedWord* head_word_;
  uint8_t* data_;
  size_t capacity_;
  size_t max_message_;
  uint64_t head_ = 0;  // ours
};

}  // namespace pvgpu::transport::internal
