// Fat binaries (the containers nvcc -fatbin writes and embeds in executables): parsing and
// PTX extraction.
//
// The bytes come from an untrusted guest. Every offset and size is checked against the image
// with overflow-safe arithmetic, payloads are views into the caller's buffer, and
// decompression never produces more than kMaxDecompressedSize bytes.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace pvgpu::fatbin {

inline constexpr uint32_t kMagic = 0xBA55ED50u;
inline constexpr uint64_t kMaxDecompressedSize = uint64_t{64} << 20;

enum class EntryKind : uint16_t { kPtx = 1, kElf = 2 };

// nvcc 13's --compress-mode: "speed" writes LZ4 blocks, "default", "size" and "balance" write
// zstd frames, "none" stores the payload as is.
enum class Compression { kNone, kLz4, kZstd };

struct Entry {
  EntryKind kind = EntryKind::kPtx;
  uint32_t arch = 0;  // SM number: 75 for compute_75 / sm_75
  uint16_t version_major = 0;  // of the PTX ISA, or of the cubin format
  uint16_t version_minor = 0;
  Compression compression = Compression::kNone;
  uint64_t decompressed_size = 0;  // 0 when not compressed
  std::span<const uint8_t> payload;  // the stored (possibly compressed) bytes
};

// Splits a fatbin container into its entries. Trailing bytes after the container (a NUL that
// cuModuleLoad appends, padding in an executable's section) are ignored. Entries of kinds other
// than PTX and ELF are skipped, as a driver that does not know them would.
StatusOr<std::vector<Entry>> Parse(std::span<const uint8_t> image);

// The entry's contents, decompressed.
StatusOr<std::string> Contents(const Entry& entry);

// The PTX text of the entry with the highest arch <= max_sm. kNoBinaryForGpu when the fatbin
// has no such PTX (only SASS, or only PTX for newer GPUs), kInvalidImage when it is malformed.
StatusOr<std::string> ExtractPtx(std::span<const uint8_t> image, int max_sm = 90);

// The device code nvcc embeds in a host object (ELF64, little endian): the fatbin in its
// `__nv_relfatbin` section (relocatable device code, nvcc -dc / -rdc=true), else its
// `.nv_fatbin` section. A view into `object`; kInvalidImage when the object is malformed,
// kNoBinaryForGpu when it carries no device code.
StatusOr<std::span<const uint8_t>> FatbinOfObject(std::span<const uint8_t> object);

// The members of an ar archive (a static library, `!<arch>` format as GNU ar and nvcc -lib
// write it), in order, without the symbol tables; names resolved through the GNU long-name
// table. Views into `archive`; kInvalidImage when it is malformed.
struct ArchiveMember {
  std::string name;
  std::span<const uint8_t> data;
};
StatusOr<std::vector<ArchiveMember>> ArchiveMembers(std::span<const uint8_t> archive);

// True when `image` starts like a fatbin container.
bool LooksLikeFatbin(std::span<const uint8_t> image);

}  // namespace pvgpu::fatbin
