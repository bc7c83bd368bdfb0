// The image cuLinkComplete hands out: the link's inputs, bundled as they were added, for the
// host to link when the image is loaded. Linking happens where the device is: the PTX engine
// links PTX inputs for the cpu adapter, the host driver's cuLink* links whatever it accepts for
// the cuda adapter. The guest cannot link for the device (it would need the device's linker),
// and a bundle is what lets one image serve every adapter.
//
// Layout, little endian, every record 8-byte aligned:
//   header:  char magic[8] = "PVGPULNK", u32 version (1), u32 count, u64 total_size
//   count records: u32 type (LinkInputType), u32 name_size, u64 data_size,
//                  name bytes, data bytes, zero padding to a multiple of 8
// total_size covers the header and every record, so that loaders given only a pointer (as
// cuModuleLoadData is) know the image's length from its header.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace pvgpu::protocol {

// The values of CUjitInputType, which cuLinkAddData takes.
enum class LinkInputType : uint32_t {
  kCubin = 0,
  kPtx = 1,
  kFatbin = 2,
  kObject = 3,
  kLibrary = 4,
  kNvvm = 5,  // LTO-IR
};

const char* LinkInputTypeName(LinkInputType type);

struct LinkInput {
  LinkInputType type = LinkInputType::kPtx;
  std::string_view name;
  std::string_view data;
};

inline constexpr char kLinkImageMagic[8] = {'P', 'V', 'G', 'P', 'U', 'L', 'N', 'K'};
inline constexpr uint32_t kLinkImageVersion = 1;
inline constexpr size_t kLinkImageHeaderSize = 24;
// Limits the decoder enforces (a guest's bytes): enough for any real link.
inline constexpr uint32_t kMaxLinkInputs = 4096;

// True when `image` starts with the magic (the caller guarantees 8 readable bytes).
bool IsLinkImage(const void* image);
// The image's total size from its header (the caller guarantees a readable header).
uint64_t LinkImageSize(const void* image);

std::vector<uint8_t> EncodeLinkImage(std::span<const LinkInput> inputs);
// Validates every size and offset against `image`; the views point into it.
StatusOr<std::vector<LinkInput>> DecodeLinkImage(std::span<const uint8_t> image);

}  // namespace pvgpu::protocol
