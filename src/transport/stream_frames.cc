#include "transport/stream_frames.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace pvgpu::transport::internal {

void ByteBuffer::Resize(size_t size) {
  if (size > capacity_) {
    const size_t capacity = std::max({size, capacity_ * 2, size_t{4096}});
    std::unique_ptr<uint8_t[]> grown(new uint8_t[capacity]);
    if (size_ != 0) std::memcpy(grown.get(), data_.get(), size_);
    data_ = std::move(grown);
    capacity_ = capacity;
  }
  size_ = size;
}

void ByteBuffer::Append(const void* bytes, size_t count) {
  if (count == 0) return;
  const size_t at = size_;
  Resize(size_ + count);
  std::memcpy(data_.get() + at, bytes, count);
}

void ByteBuffer::AppendFrame(FrameType type, std::span<const std::span<const uint8_t>> parts) {
  size_t total = 0;
  for (const auto& part : parts) total += part.size();
  const FrameHeader header{static_cast<uint32_t>(total), type};
  Append(&header, sizeof(header));
  for (const auto& part : parts) Append(part.data(), part.size());
}

void ByteBuffer::AppendValueFrame(FrameType type, uint64_t value) {
  const std::span<const uint8_t> part(reinterpret_cast<const uint8_t*>(&value), sizeof(value));
  AppendFrame(type, {&part, 1});
}

void ByteBuffer::Swap(ByteBuffer& other) {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(capacity_, other.capacity_);
}

Status FrameDecoder::Feed(std::span<const uint8_t> bytes, Output* out) {
  if (failed_) return Error(Code::kInvalidValue, "corrupt stream (earlier frame)");
  for (;;) {
    if (!in_body_) {
      if (bytes.empty()) return Status::Ok();
      const size_t take = std::min(bytes.size(), sizeof(header_) - header_have_);
      std::memcpy(reinterpret_cast<uint8_t*>(&header_) + header_have_, bytes.data(), take);
      header_have_ += take;
      bytes = bytes.subspan(take);
      if (header_have_ < sizeof(header_)) return Status::Ok();
      const uint32_t length = header_.length;
      const bool valid = (header_.type == kMessage && length <= max_message_size_) ||
                         ((header_.type == kFence || header_.type == kFenceWanted) &&
                          length == sizeof(uint64_t)) ||
                         ((header_.type == kHeartbeat || header_.type == kGoodbye) && length == 0);
      if (!valid) {
        failed_ = true;
        return Error(Code::kInvalidValue, "corrupt stream: frame type " +
                                              std::to_string(header_.type) + " of " +
                                              std::to_string(length) + " bytes");
      }
      body_ = allocate_ ? allocate_(length) : std::vector<uint8_t>(length);
      body_have_ = 0;
      in_body_ = true;
    }
    const size_t take = std::min(bytes.size(), body_.size() - body_have_);
    if (take > 0) {
      std::memcpy(body_.data() + body_have_, bytes.data(), take);
      body_have_ += take;
      bytes = bytes.subspan(take);
    }
    if (body_have_ < body_.size()) return Status::Ok();
    Complete(out);
  }
}

std::span<uint8_t> FrameDecoder::DirectTarget(size_t min_bytes) {
  if (failed_ || !in_body_ || body_.size() - body_have_ < min_bytes) return {};
  return {body_.data() + body_have_, body_.size() - body_have_};
}

Status FrameDecoder::Filled(size_t count, Output* out) {
  if (failed_ || !in_body_ || count > body_.size() - body_have_) {
    failed_ = true;
    return Error(Code::kInvalidValue, "direct read beyond the frame");
  }
  body_have_ += count;
  if (body_have_ == body_.size()) Complete(out);
  return Status::Ok();
}

void FrameDecoder::Complete(Output* out) {
  in_body_ = false;
  header_have_ = 0;
  switch (header_.type) {
    case kMessage:
      out->message_bytes += body_.size();
      out->messages.push_back(std::move(body_));
      break;
    case kFence:
    case kFenceWanted: {
      uint64_t value;
      std::memcpy(&value, body_.data(), sizeof(value));
      if (header_.type == kFence) {
        out->fence = std::max(out->fence, value);
      } else {
        out->fences_wanted.push_back(value);
      }
      break;
    }
    case kGoodbye:
      out->goodbye = true;
      break;
    default:
      break;
  }
  body_ = {};
  body_have_ = 0;
}

}  // namespace pvgpu::transport::internal
