// Fatbin container layout, as nvcc 13 writes it (all fields little-endian), worked out from
// containers nvcc generates with each --compress-mode and target mix:
//
//   container header (16 bytes)
//     0x00 u32 magic 0xBA55ED50   0x04 u16 version (1)   0x06 u16 header size
//     0x08 u64 size of the entries that follow the header
//   entry header (header size bytes, 64 for ELF and 80 for PTX in practice), then its payload
//     0x00 u16 kind (1 PTX, 2 ELF)  0x02 u16 entry version   0x04 u32 header size
//     0x08 u64 payload size (padded to 8 bytes)
//     0x10 u32 compressed size (0 when stored)
//     0x18 u16 minor, u16 major: PTX ISA or cubin format version
//     0x1c u32 SM arch (75 = compute_75 / sm_75)
//     0x20 u32, u32: object name offset and length (unused here)
//     0x28 u64 flags: 0x2000 payload is an LZ4 block, 0x8000 payload is a zstd frame
//     0x38 u64 decompressed size
//
// This is the one file that reinterprets the raw bytes; everything after Parse works on Entry.
#include "fatbin/fatbin.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace pvgpu::fatbin {
namespace {

constexpr size_t kContainerHeaderSize = 16;
constexpr size_t kMinEntryHeaderSize = 0x40;  // through the decompressed-size field
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;

template <typename T>
T Read(std::span<const uint8_t> bytes, size_t offset) {
  // Callers have checked offset + sizeof(T) <= bytes.size().
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

Status Invalid(std::string message) { return Error(Code::kInvalidImage, "fatbin: " + message); }

}  // namespace

bool LooksLikeFatbin(std::span<const uint8_t> image) {
  return image.size() >= sizeof(uint32_t) && Read<uint32_t>(image, 0) == kMagic;
}

StatusOr<std::vector<Entry>> Parse(std::span<const uint8_t> image) {
  if (image.size() < kContainerHeaderSize) return Invalid("shorter than its header");
  if (Read<uint32_t>(image, 0) != kMagic) return Invalid("bad magic");
  const uint16_t header_size = Read<uint16_t>(image, 6);
  const uint64_t fat_size = Read<uint64_t>(image, 8);
  if (header_size < kContainerHeaderSize || header_size > image.size()) {
    return Invalid("bad header size " + std::to_string(header_size));
  }
  if (fat_size > image.size() - header_size) {
    return Invalid("container of " + std::to_string(fat_size) + " bytes exceeds the image");
  }
  const auto body = image.subspan(header_size, fat_size);
  std::vector<Entry> entries;
  size_t offset = 0;
  while (offset < body.size()) {
    const size_t left = body.size() - offset;
    if (left < kMinEntryHeaderSize) return Invalid("truncated entry header");
    const auto kind = Read<uint16_t>(body, offset);
    const uint32_t entry_header_size = Read<uint32_t>(body, offset + 0x04);
    const uint64_t payload_size = Read<uint64_t>(body, offset + 0x08);
    if (entry_header_size < kMinEntryHeaderSize || entry_header_size > left) {
      return Invalid("bad entry header size " + std::to_string(entry_header_size));
    }
    if (payload_size > left - entry_header_size) return Invalid("entry payload exceeds the image");
    const uint32_t compressed_size = Read<uint32_t>(body, offset + 0x10);
    const uint64_t flags = Read<uint64_t>(body, offset + 0x28);
    Entry entry;
    entry.kind = static_cast<EntryKind>(kind);
    entry.version_minor = Read<uint16_t>(body, offset + 0x18);
    entry.version_major = Read<uint16_t>(body, offset + 0x1a);
    entry.arch = Read<uint32_t>(body, offset + 0x1c);
    uint64_t stored = payload_size;
    if ((flags & (kFlagLz4 | kFlagZstd)) != 0) {
      if ((flags & kFlagLz4) != 0 && (flags & kFlagZstd) != 0) {
        return Invalid("entry claims two compression methods");
      }
      entry.compression = (flags & kFlagLz4) != 0 ? Compression::kLz4 : Compression::kZstd;
      entry.decompressed_size = Read<uint64_t>(body, offset + 0x38);
      if (compressed_size == 0 || compressed_size > payload_size) {
        return Invalid("bad compressed size " + std::to_string(compressed_size));
      }
      if (entry.decompressed_size == 0 || entry.decompressed_size > kMaxDecompressedSize) {
        return Invalid("decompressed size " + std::to_string(entry.decompressed_size) +
                       " out of range");
      }
      stored = compressed_size;
    }
    entry.payload = body.subspan(offset + entry_header_size, stored);
    if (kind == static_cast<uint16_t>(EntryKind::kPtx) ||
        kind == static_cast<uint16_t>(EntryKind::kElf)) {
      entries.push_back(entry);
    }
    offset += entry_header_size + payload_size;  // <= body.size(): both checked above
  }
  return entries;
}

StatusOr<std::string> ExtractPtx(std::span<const uint8_t> image, int max_sm) {
  PVGPU_ASSIGN_OR_RETURN(const auto entries, Parse(image));
  const Entry* best = nullptr;
  uint32_t lowest_ptx = 0;
  uint32_t lowest_sm = 0, highest_sm = 0;  // of the machine code, to name it in the error
  for (const Entry& e : entries) {
    if (e.kind != EntryKind::kPtx) {
      if (lowest_sm == 0 || e.arch < lowest_sm) lowest_sm = e.arch;
      highest_sm = std::max(highest_sm, e.arch);
      continue;
    }
    if (lowest_ptx == 0 || e.arch < lowest_ptx) lowest_ptx = e.arch;
    if (max_sm >= 0 && e.arch <= static_cast<uint32_t>(max_sm) &&
        (best == nullptr || e.arch > best->arch)) {
      best = &e;
    }
  }
  if (best == nullptr) {
    if (lowest_ptx != 0) {
      return Error(Code::kNoBinaryForGpu, "fatbin's PTX needs sm_" + std::to_string(lowest_ptx) +
                                              ", newer than sm_" + std::to_string(max_sm));
    }
    std::string which = "sm_" + std::to_string(lowest_sm);
    if (highest_sm != lowest_sm) which += "..sm_" + std::to_string(highest_sm);
    return Error(Code::kNoBinaryForGpu,
                 lowest_sm == 0 ? "fatbin holds no PTX and no machine code"
                                : "fatbin holds no PTX, only machine code for " + which);
  }
  PVGPU_ASSIGN_OR_RETURN(std::string text, Contents(*best));
  // PTX is stored NUL-terminated and padded; the text ends at the first NUL.
  if (auto nul = text.find('\0'); nul != std::string::npos) text.resize(nul);
  return text;
}

}  // namespace pvgpu::fatbin

namespace pvgpu::fatbin {

StatusOr<std::span<const uint8_t>> FatbinOfObject(std::span<const uint8_t> object) {
  auto bad = [](const std::string& what) { return Error(Code::kInvalidImage, "object: " + what); };
  constexpr size_t kElfHeaderSize = 64, kSectionHeaderSize = 64;
  if (object.size() < kElfHeaderSize || std::memcmp(object.data(), "\x7f" "ELF", 4) != 0) {
    return bad("not an ELF file");
  }
  if (object[4] != 2 || object[5] != 1) return bad("not a 64-bit little-endian ELF file");
  const uint64_t shoff = Read<uint64_t>(object, 0x28);
  const uint16_t shentsize = Read<uint16_t>(object, 0x3a);
  const uint16_t shnum = Read<uint16_t>(object, 0x3c);
  const uint16_t shstrndx = Read<uint16_t>(object, 0x3e);
  if (shentsize != kSectionHeaderSize || shoff > object.size() ||
      uint64_t{shnum} * kSectionHeaderSize > object.size() - shoff || shstrndx >= shnum) {
    return bad("section table outside the file");
  }
  // A section's [offset, offset + size) within the file; empty when it lies outside.
  auto section = [&](uint16_t index, uint32_t* name) -> std::span<const uint8_t> {
    const size_t at = shoff + size_t{index} * kSectionHeaderSize;
    *name = Read<uint32_t>(object, at);
    const uint32_t type = Read<uint32_t>(object, at + 4);
    const uint64_t offset = Read<uint64_t>(object, at + 0x18);
    const uint64_t size = Read<uint64_t>(object, at + 0x20);
    if (type == 8 /* SHT_NOBITS */ || offset > object.size() || size > object.size() - offset) {
      return {};
    }
    return object.subspan(offset, size);
  };
  uint32_t unused = 0;
  const std::span<const uint8_t> names = section(shstrndx, &unused);
  std::span<const uint8_t> found;
  int rank = 0;  // 2: __nv_relfatbin, 1: .nv_fatbin
  for (uint16_t i = 0; i < shnum; ++i) {
    uint32_t name_offset = 0;
    const std::span<const uint8_t> contents = section(i, &name_offset);
    if (name_offset >= names.size()) continue;
    const char* start = reinterpret_cast<const char*>(names.data()) + name_offset;
    const std::string_view name(start, strnlen(start, names.size() - name_offset));
    const int this_rank = name == "__nv_relfatbin" ? 2 : name == ".nv_fatbin" ? 1 : 0;
    if (this_rank > rank && LooksLikeFatbin(contents)) {
      found = contents;
      rank = this_rank;
    }
  }
  if (rank == 0) return Error(Code::kNoBinaryForGpu, "object: no embedded device code");
  return found;
}

}  // namespace pvgpu::fatbin

namespace pvgpu::fatbin {

StatusOr<std::vector<ArchiveMember>> ArchiveMembers(std::span<const uint8_t> archive) {
  auto bad = [](const std::string& what) { return Error(Code::kInvalidImage, "archive: " + what); };
  constexpr std::string_view kArchiveMagic = "!<arch>\n";
  constexpr size_t kHeaderSize = 60;
  if (archive.size() < kArchiveMagic.size() ||
      std::memcmp(archive.data(), kArchiveMagic.data(), kArchiveMagic.size()) != 0) {
    return bad("not an ar archive");
  }
  auto field = [&](size_t at, size_t length) {
    std::string_view text(reinterpret_cast<const char*>(archive.data()) + at, length);
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    return text;
  };
  std::vector<ArchiveMember> members;
  std::string_view long_names;
  size_t at = kArchiveMagic.size();
  while (at < archive.size()) {
    if (archive.size() - at < kHeaderSize) return bad("truncated member header");
    if (archive[at + 58] != '`' || archive[at + 59] != '\n') return bad("bad member header");
    const std::string_view size_text = field(at + 48, 10);
    uint64_t size = 0;
    for (char c : size_text) {
      if (c < '0' || c > '9' || size > (uint64_t{1} << 40)) return bad("bad member size");
      size = size * 10 + static_cast<uint64_t>(c - '0');
    }
    const size_t data_at = at + kHeaderSize;
    if (size > archive.size() - data_at) return bad("member extends past the archive");
    const std::span<const uint8_t> data = archive.subspan(data_at, size);
    std::string_view name = field(at, 16);
    if (name == "/" || name == "/SYM64/" || name == "__.SYMDEF" || name == "__.SYMDEF SORTED") {
      // the symbol index
    } else if (name == "//") {
      long_names = {reinterpret_cast<const char*>(data.data()), data.size()};
    } else {
      std::string resolved;
      if (name.size() > 1 && name[0] == '/') {
        size_t offset = 0;
        for (char c : name.substr(1)) {
          if (c < '0' || c > '9' || offset > long_names.size()) return bad("bad long name");
          offset = offset * 10 + static_cast<size_t>(c - '0');
        }
        if (offset >= long_names.size()) return bad("long name outside its table");
        const std::string_view rest = long_names.substr(offset);
        resolved = std::string(rest.substr(0, rest.find_first_of("/\n")));
      } else {
        if (!name.empty() && name.back() == '/') name.remove_suffix(1);
        resolved = std::string(name);
      }
      members.push_back({std::move(resolved), data});
    }
    at = data_at + size + (size & 1);  // members start at even offsets
  }
  return members;
}

}  // namespace pvgpu::fatbin
