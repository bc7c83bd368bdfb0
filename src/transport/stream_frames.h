// The remote channel's framing: how the Endpoint's messages, fences and heartbeats travel over
// a byte stream, and the decoder that takes them apart again. The decoder reads bytes from the
// network, so it treats them as hostile: every header is checked before its length is used.
//
// Frames (little-endian): u32 length, u32 type, then `length` bytes.
//   kMessage      one Endpoint message (length <= max_message_size)
//   kFence        u64: the host's completion fence; the reader keeps the largest value seen
//   kHeartbeat    empty: sent after heartbeat_ms without other output, so silence means trouble
//   kGoodbye      empty: orderly close (the peer's logs then say "closed", not "lost")
//   kFenceWanted  u64: the guest waits for the fence to reach this value; the host sends a
//                 fence frame as soon as it does instead of waiting for other output to carry it
//                 (guests ask for as many values as they have waits; hosts keep a bounded set)
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"

namespace pvgpu::transport::internal {

static_assert(std::endian::native == std::endian::little, "frames are little-endian");

enum FrameType : uint32_t {
  kMessage = 1,
  kFence = 2,
  kHeartbeat = 3,
  kGoodbye = 4,
  kFenceWanted = 5,
};
struct FrameHeader {
  uint32_t length;
  uint32_t type;
};
static_assert(sizeof(FrameHeader) == 8);

// A growable byte buffer that, unlike std::vector, does not zero what it grows into: bulk
// payloads are written over at once, and zeroing a megabyte first would be another pass over
// it.
class ByteBuffer {
 public:
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  // Grows (keeping the contents) or shrinks; new bytes are uninitialized.
  void Resize(size_t size);
  void Append(const void* bytes, size_t count);
  void AppendFrame(FrameType type, std::span<const std::span<const uint8_t>> parts);
  void AppendValueFrame(FrameType type, uint64_t value);  // kFence, kFenceWanted
  void Swap(ByteBuffer& other);

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Takes the peer's bytes apart into frames. Bytes may come in any pieces; a frame may span
// any number of them.
class FrameDecoder {
 public:
  // Where message bodies come from: a vector of exactly `size` bytes whose contents do not
  // matter (the endpoint recycles received messages' vectors, so that a megabyte-sized body
  // costs neither an allocation nor a pass that zeroes it).
  using Allocate = std::function<std::vector<uint8_t>(size_t size)>;
  explicit FrameDecoder(size_t max_message_size, Allocate allocate = {})
      : max_message_size_(max_message_size), allocate_(std::move(allocate)) {}

  // What the bytes fed so far completed.
  struct Output {
    std::vector<std::vector<uint8_t>> messages;
    size_t message_bytes = 0;
    uint64_t fence = 0;                   // the largest fence value seen, 0 if none
    std::vector<uint64_t> fences_wanted;  // kFenceWanted values, in order
    bool goodbye = false;
    bool any() const {
      return !messages.empty() || fence != 0 || !fences_wanted.empty() || goodbye;
    }
  };

  // Consumes `bytes`. kInvalidValue, naming the offending frame, when they break the framing
  // rules; the stream cannot be resynchronized after that and the decoder stays failed.
  Status Feed(std::span<const uint8_t> bytes, Output* out);

  // The unfilled rest of the message body under way when at least `min_bytes` of it are
  // missing, else empty: the caller may read from the stream straight into it (saving a copy
  // of bulk data) and then report the count with Filled.
  std::span<uint8_t> DirectTarget(size_t min_bytes);
  Status Filled(size_t count, Output* out);

  bool failed() const { return failed_; }
  // True between frames (nothing of a frame has arrived).
  bool at_boundary() const { return header_have_ == 0; }

 private:
  // Completes the frame under way if its body is all there.
  void Complete(Output* out);

  const size_t max_message_size_;
  const Allocate allocate_;
  FrameHeader header_{};
  size_t header_have_ = 0;
  std::vector<uint8_t> body_;
  size_t body_have_ = 0;
  bool in_body_ = false;
  bool failed_ = false;
};

}  // namespace pvgpu::transport::internal
