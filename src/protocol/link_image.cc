#include "protocol/link_image.h"

#include <cstring>

namespace pvgpu::protocol {

namespace {

constexpr size_t kRecordHeaderSize = 16;

uint64_t Padded(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

template <typename T>
void Put(std::vector<uint8_t>& out, const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

template <typename T>
T Get(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

Status Bad(const std::string& what) { return Error(Code::kInvalidImage, "link image: " + what); }

}  // namespace

const char* LinkInputTypeName(LinkInputType type) {
  switch (type) {
    case LinkInputType::kCubin: return "cubin";
    case LinkInputType::kPtx: return "PTX";
    case LinkInputType::kFatbin: return "fatbinary";
    case LinkInputType::kObject: return "object";
    case LinkInputType::kLibrary: return "library";
    case LinkInputType::kNvvm: return "LTO-IR";
  }
  return "unknown";
}

bool IsLinkImage(const void* image) {
  return std::memcmp(image, kLinkImageMagic, sizeof(kLinkImageMagic)) == 0;
}

uint64_t LinkImageSize(const void* image) {
  return Get<uint64_t>(static_cast<const uint8_t*>(image) + 16);
}

std::vector<uint8_t> EncodeLinkImage(std::span<const LinkInput> inputs) {
  std::vector<uint8_t> out(kLinkImageMagic, kLinkImageMagic + sizeof(kLinkImageMagic));
  Put(out, kLinkImageVersion);
  Put(out, static_cast<uint32_t>(inputs.size()));
  Put(out, uint64_t{0});  // total_size, patched below
  for (const LinkInput& input : inputs) {
    Put(out, static_cast<uint32_t>(input.type));
    Put(out, static_cast<uint32_t>(input.name.size()));
    Put(out, static_cast<uint64_t>(input.data.size()));
    out.insert(out.end(), input.name.begin(), input.name.end());
    out.insert(out.end(), input.data.begin(), input.data.end());
    out.resize(Padded(out.size()), 0);
  }
  const uint64_t total = out.size();
  std::memcpy(out.data() + 16, &total, sizeof(total));
  return out;
}

StatusOr<std::vector<LinkInput>> DecodeLinkImage(std::span<const uint8_t> image) {
  if (image.size() < kLinkImageHeaderSize || !IsLinkImage(image.data())) {
    return Bad("missing header");
  }
  const uint32_t version = Get<uint32_t>(image.data() + 8);
  if (version != kLinkImageVersion) {
    return Bad("version " + std::to_string(version) + " (this host reads version " +
               std::to_string(kLinkImageVersion) + ")");
  }
  const uint32_t count = Get<uint32_t>(image.data() + 12);
  const uint64_t total = Get<uint64_t>(image.data() + 16);
  if (total > image.size()) return Bad("total size exceeds the image");
  if (count == 0) return Bad("no inputs");
  if (count > kMaxLinkInputs) return Bad("more than " + std::to_string(kMaxLinkInputs) + " inputs");
  std::vector<LinkInput> inputs;
  inputs.reserve(count);
  uint64_t at = kLinkImageHeaderSize;
  for (uint32_t i = 0; i < count; ++i) {
    if (total - at < kRecordHeaderSize) return Bad("record " + std::to_string(i) + " truncated");
    const uint8_t* record = image.data() + at;
    const uint32_t type = Get<uint32_t>(record);
    const uint32_t name_size = Get<uint32_t>(record + 4);
    const uint64_t data_size = Get<uint64_t>(record + 8);
    at += kRecordHeaderSize;
    if (type > static_cast<uint32_t>(LinkInputType::kNvvm)) {
      return Bad("record " + std::to_string(i) + " has unknown input type " + std::to_string(type));
    }
    if (name_size > total - at || data_size > total - at - name_size) {
      return Bad("record " + std::to_string(i) + " extends past the image");
    }
    LinkInput input;
    input.type = static_cast<LinkInputType>(type);
    input.name = {reinterpret_cast<const char*>(image.data() + at), name_size};
    input.data = {reinterpret_cast<const char*>(image.data() + at + name_size), data_size};
    inputs.push_back(input);
    at = Padded(at + name_size + data_size);
    if (at > total) return Bad("record " + std::to_string(i) + " padding extends past the image");
  }
  if (at != total) return Bad("trailing bytes after the last record");
  return inputs;
}

}  // namespace pvgpu::protocol
