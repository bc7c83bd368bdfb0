// Reads and writes the shared ring bytes. With ring.h and shm_layout_unsafe.h, the only code
// that touches memory the peer can write.
#include "transport/ring.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace pvgpu::transport::internal {
namespace {

Status Corrupt(const std::string& what) {
  return Error(Code::kInvalidValue, "corrupt ring: " + what);
}

}  // namespace

StatusOr<size_t> RingWriter::FreeBytes() {
  // Acquire: the consumer finished copying the bytes out before publishing its head. seq_cst
  // (free on x86 and ARMv8) because a producer about to sleep re-checks with this load after
  // raising its waiter flag (see ShmEndpoint::WaitUntil).
  const uint64_t head = Word(*head_word_).load(std::memory_order_seq_cst);
  const uint64_t used = tail_ - head;  // modular; a head ahead of our tail wraps to huge
  // A head behind the one seen before would also take back space we were told is free.
  if (used > capacity_ || head - head_seen_ > tail_ - head_seen_) {
    return Corrupt("consumer head " + std::to_string(head) + " is not within " +
                   std::to_string(capacity_) + " bytes behind tail " + std::to_string(tail_) +
                   " and at or after " + std::to_string(head_seen_));
  }
  head_seen_ = head;
  return capacity_ - used;
}

void RingWriter::CopyIn(uint64_t at, const uint8_t* bytes, size_t size) {
  const size_t pos = at & (capacity_ - 1);
  const size_t first = std::min(size, capacity_ - pos);
  std::memcpy(data_ + pos, bytes, first);
  if (first < size) std::memcpy(data_, bytes + first, size - first);
}

uint64_t RingWriter::WriteHead(std::span<const std::span<const uint8_t>> parts, size_t total) {
  const uint32_t length = static_cast<uint32_t>(total);
  // Frames are 8-aligned and the ring is a power of two >= 8: the length word never wraps.
  std::memcpy(data_ + (tail_ & (capacity_ - 1)), &length, sizeof(length));
  uint64_t at = tail_ + sizeof(length);
  for (const auto& part : parts) {
    if (part.empty()) continue;
    CopyIn(at, part.data(), part.size());
    at += part.size();
  }
  return at;
}

void RingWriter::Publish(size_t total) {
  tail_ += FrameBytes(total);
  // seq_cst (not just release): pairs with the consumer's seq_cst waiter flag increment, so
  // either we see its flag and ring its doorbell, or it sees our tail before it sleeps.
  Word(*tail_word_).store(tail_, std::memory_order_seq_cst);
}

void RingWriter::Write(std::span<const std::span<const uint8_t>> parts, size_t total) {
  WriteHead(parts, total);
  Publish(total);
}

Status RingWriter::WriteFilled(std::span<const std::span<const uint8_t>> parts, size_t parts_total,
                               size_t fill_bytes, Fill fill) {
  const size_t total = parts_total + fill_bytes;
  const uint64_t at = WriteHead(parts, total);
  if (fill_bytes != 0) {
    const size_t pos = at & (capacity_ - 1);
    const size_t first = std::min(fill_bytes, capacity_ - pos);
    PVGPU_TRY(fill({data_ + pos, first}, 0));
    if (first < fill_bytes) PVGPU_TRY(fill({data_, fill_bytes - first}, first));
  }
  Publish(total);
  return Status::Ok();
}

bool RingReader::HasData() const {
  // seq_cst: the re-check after raising the waiter flag (see ShmEndpoint::WaitUntil).
  return Word(*tail_word_).load(std::memory_order_seq_cst) != head_;
}

StatusOr<std::optional<uint32_t>> RingReader::NextLength() {
  if (tail_seen_ == head_) {
    // Acquire: the producer wrote the frames before publishing its tail.
    const uint64_t tail = Word(*tail_word_).load(std::memory_order_acquire);
    const uint64_t published = tail - head_;
    if (published == 0) return std::optional<uint32_t>();
    if (published > capacity_) {
      return Corrupt("producer tail " + std::to_string(tail) + " is not within " +
                     std::to_string(capacity_) + " bytes ahead of head " + std::to_string(head_));
    }
    if (published < 8 || published % 8 != 0) {
      return Corrupt("producer published " + std::to_string(published) +
                     " bytes, not a whole number of frames");
    }
    tail_seen_ = tail;
  }
  // Validated when read, and only shrinks as whole frames are taken.
  const uint64_t available = tail_seen_ - head_;
  uint32_t length;  // copied once: the peer may rewrite it while we look
  std::memcpy(&length, data_ + (head_ & (capacity_ - 1)), sizeof(length));
  if (length > max_message_) {
    return Corrupt("message length " + std::to_string(length) + " exceeds the maximum " +
                   std::to_string(max_message_));
  }
  if (FrameBytes(length) > available) {
    return Corrupt("message length " + std::to_string(length) + " runs past the " +
                   std::to_string(available) + " published bytes");
  }
  return std::optional<uint32_t>(length);
}

void RingReader::Consume(uint32_t length) {
  head_ += FrameBytes(length);
  // seq_cst for the same Dekker pairing as RingWriter::Write, with the producer's space flag.
  Word(*head_word_).store(head_, std::memory_order_seq_cst);
}

StatusOr<bool> RingReader::TryRead(std::vector<uint8_t>* out) {
  return TryVisit([out](std::span<const uint8_t> first, std::span<const uint8_t> second) {
    out->resize(first.size() + second.size());
    // An empty message leaves out->data() null, and memcpy from or to null is undefined even
    // for zero bytes (UBSan stops the daemon on it).
    if (!first.empty()) std::memcpy(out->data(), first.data(), first.size());
    if (!second.empty()) std::memcpy(out->data() + first.size(), second.data(), second.size());
  });
}

StatusOr<bool> RingReader::TryVisit(
    FunctionRef<void(std::span<const uint8_t>, std::span<const uint8_t>)> visit) {
  PVGPU_ASSIGN_OR_RETURN(std::optional<uint32_t> length, NextLength());
  if (!length) return false;
  const size_t pos = (head_ + sizeof(uint32_t)) & (capacity_ - 1);
  const size_t first = std::min<size_t>(*length, capacity_ - pos);
  visit({data_ + pos, first}, {data_, *length - first});
  Consume(*length);
  return true;
}

}  // namespace pvgpu::transport::internal
