// libFuzzer target for the fatbin parser: the bytes a guest sends with a kFatbin module load,
// and as link inputs: host objects with embedded device code and static libraries.
// Seeds: tests/fuzz/fatbin/ (small nvcc-generated fatbins: stored, LZ4, zstd, PTX + SASS; an
// nvcc -dc object and an ar archive of it).
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
  if (auto fatbin = pvgpu::fatbin::FatbinOfObject(image); fatbin.ok()) {
    (void)pvgpu::fatbin::ExtractPtx(*fatbin, 90);
  }
  if (auto members = pvgpu::fatbin::ArchiveMembers(image); members.ok()) {
    for (const auto& member : *members) (void)pvgpu::fatbin::FatbinOfObject(member.data);
  }
  return 0;
}
