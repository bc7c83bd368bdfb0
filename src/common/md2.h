// MD2 (RFC 1319) and HMAC-MD2 (the RFC 2104 construction over MD2).
//
// MD2 is long broken as a cryptographic hash; pvgpu needs it only because NVIDIA's CUDA runtime
// asks the driver to prove itself with an HMAC-MD2 of the process's identity (the runtime's
// integrity check, see docs/cudart.md). Nothing in pvgpu relies on it for security.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace pvgpu {

using Md2Digest = std::array<uint8_t, 16>;

// Incremental MD2: Update any number of times, then Final once.
class Md2 {
 public:
  static constexpr size_t kBlockSize = 16;

  void Update(std::span<const uint8_t> bytes);
  void Update(std::string_view text) {
    Update({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  }
  // Pads, appends the checksum and returns the digest. The object is spent afterwards.
  Md2Digest Final();

 private:
  void Compress(const uint8_t* block);

  std::array<uint8_t, 48> state_{};     // X in the RFC
  std::array<uint8_t, 16> checksum_{};  // C
  uint8_t last_ = 0;                    // L: the checksum byte last computed
  std::array<uint8_t, kBlockSize> buffer_{};
  size_t buffered_ = 0;
};

Md2Digest Md2Of(std::span<const uint8_t> bytes);
inline Md2Digest Md2Of(std::string_view text) {
  return Md2Of({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// HMAC over MD2 with its 16-byte block: a longer key is first hashed, a shorter one padded with
// zeros; then MD2((K ^ 0x5c..) || MD2((K ^ 0x36..) || message)).
Md2Digest HmacMd2(std::span<const uint8_t> key, std::span<const uint8_t> message);

}  // namespace pvgpu
