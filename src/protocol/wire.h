// Framing shared by every message on the channel, and the byte reader and writer of the
// variable-size records that ride in payloads (module_description.h). The fixed request and
// reply structs are generated (protocol_autogen.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "protocol/module_description.h"
#include "protocol/protocol_autogen.h"

namespace pvgpu::protocol {

// Precedes every message's body. `seq` numbers guest-to-host messages from 1; the host's reply
// and the completion fence refer to it.
struct MessageHeader {
  uint32_t op = 0;
  uint32_t flags = 0;
  uint64_t seq = 0;
};
static_assert(sizeof(MessageHeader) == 16);

enum MessageFlags : uint32_t {
  kFlagReply = 1u << 0,      // host-to-guest reply to message `seq`
  kFlagWantReply = 1u << 1,  // asynchronous message whose result the guest waits for
};

// Appends fixed-size values and length-prefixed strings to a byte vector.
class ByteWriter {
 public:
  template <typename T>
  void Put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void PutString(std::string_view text) {
    Put(static_cast<uint32_t>(text.size()));
    bytes_.insert(bytes_.end(), text.begin(), text.end());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads what ByteWriter wrote, refusing to run past the end (the bytes may be hostile).
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T* value) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (bytes_.size() - offset_ < sizeof(T)) return false;
    std::memcpy(value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* text, size_t max_size = 1u << 24) {
    uint32_t size = 0;
    if (!Get(&size) || size > max_size || bytes_.size() - offset_ < size) return false;
    text->assign(reinterpret_cast<const char*>(bytes_.data() + offset_), size);
    offset_ += size;
    return true;
  }
  bool done() const { return offset_ == bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  size_t offset_ = 0;
};

}  // namespace pvgpu::protocol
