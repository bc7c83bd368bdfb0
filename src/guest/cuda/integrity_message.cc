#include "guest/cuda/integrity_message.h"

namespace pvgpu::guest {
namespace {

// The runtime's HMAC key: one MD2 block, used as it is.
constexpr uint8_t kKey[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                              0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

// Little-endian whatever the host's order, since the runtime hashes its own little-endian view.
template <typename T>
void Append(std::vector<uint8_t>& out, T value) {
  const auto bits = static_cast<uint64_t>(value);
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

}  // namespace

std::vector<uint8_t> IntegrityMessage(const IntegrityInputs& inputs) {
  std::vector<uint8_t> out;
  out.reserve(48 + 28 * inputs.devices.size());
  Append(out, inputs.driver_version);
  Append(out, inputs.version);
  Append(out, inputs.pid);
  Append(out, inputs.thread);
  Append(out, inputs.cudart_table);
  Append(out, inputs.integrity_table);
  Append(out, inputs.check_function);
  Append(out, inputs.unix_seconds);
  for (const IntegrityDevice& device : inputs.devices) {
    out.insert(out.end(), std::begin(device.uuid), std::end(device.uuid));
    Append(out, static_cast<uint32_t>(device.pci_domain));
    Append(out, static_cast<uint32_t>(device.pci_bus));
    Append(out, static_cast<uint32_t>(device.pci_device));
  }
  return out;
}

Md2Digest IntegrityAnswer(const IntegrityInputs& inputs) {
  return HmacMd2(kKey, IntegrityMessage(inputs));
}

}  // namespace pvgpu::guest
