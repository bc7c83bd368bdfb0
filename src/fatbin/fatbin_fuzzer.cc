// libFuzzer target for the fatbin parser: the bytes a guest sends with a kFatbin module load.
// Seeds: tests/fuzz/fatbin/ (small nvcc-generated fatbins: stored, LZ4, zstd, PTX + SASS).
#include <cstddef>
#include <cstdint>
#include <span>

#include "fatbin/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> image(data, size);
  auto entries = pvgpu::fatbin::Parse(image);
  if (entries.ok()) {
    for (const auto& entry : *entries) (void)pvgpu::fatbin::Contents(entry);
  }
  (void)pvgpu::fatbin::ExtractPtx(image, 90);
  return 0;
}
