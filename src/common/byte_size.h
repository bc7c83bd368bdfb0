// Sizes as people write them on command lines and in config files: "4G", "512MiB", "123".
#pragma once

#include <cstdint>
#include <string>

namespace pvgpu {

// K, M, G and T suffixes are powers of 1024, optionally followed by "i" and "B"; no suffix
// means bytes. Returns false on malformed input or overflow.
bool ParseByteSize(const std::string& text, uint64_t* bytes);

}  // namespace pvgpu
