#include "fatbin/fatbin.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pvgpu::fatbin {
namespace {

using Bytes = std::vector<uint8_t>;

// nvcc-generated fatbins (src/fatbin/CMakeLists.txt), skipped when nvcc is missing.
Bytes Load(const std::string& name) {
  std::ifstream in(std::string(PVGPU_FATBIN_TESTDATA) + "/" + name + ".fatbin", std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

#define LOAD_OR_SKIP(var, name)                               \
  const Bytes var = Load(name);                               \
  if (var.empty()) GTEST_SKIP() << name << ".fatbin not built (no nvcc)"

void ExpectScalePtx(const StatusOr<std::string>& ptx, const std::string& target) {
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_NE(ptx->find(".entry scale("), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find(".target " + target), std::string::npos) << *ptx;
  EXPECT_EQ(ptx->find('\0'), std::string::npos);
}

// A host object with relocatable device code (nvcc -dc), built beside the fatbins.
Bytes LoadObject() {
  std::ifstream in(std::string(PVGPU_FATBIN_TESTDATA) + "/scale_rdc.o", std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(ObjectTest, FindsTheRelocatableFatbin) {
  const Bytes object = LoadObject();
  if (object.empty()) GTEST_SKIP() << "scale_rdc.o not built (no nvcc)";
  auto fatbin = FatbinOfObject(object);
  ASSERT_TRUE(fatbin.ok()) << fatbin.status().ToString();
  ExpectScalePtx(ExtractPtx(*fatbin), "sm_75");
}

TEST(ObjectTest, RejectsMalformedObjects) {
  const Bytes object = LoadObject();
  if (object.empty()) GTEST_SKIP() << "scale_rdc.o not built (no nvcc)";
  EXPECT_EQ(FatbinOfObject(Bytes(10, 0)).status().code(), Code::kInvalidImage);
  // Every truncation fails cleanly (or, where the fatbin's section survives, still finds it).
  for (size_t n = 0; n < object.size(); n += 7) {
    auto fatbin = FatbinOfObject(std::span(object).first(n));
    if (fatbin.ok()) EXPECT_TRUE(LooksLikeFatbin(*fatbin));
  }
  // A section table pointing past the end.
  Bytes bad = object;
  const uint64_t far = uint64_t{1} << 40;
  std::memcpy(bad.data() + 0x28, &far, sizeof(far));
  EXPECT_EQ(FatbinOfObject(bad).status().code(), Code::kInvalidImage);
  // An object without device code (the test's own kind of ELF: no fatbin section).
  Bytes stripped = object;
  for (size_t i = 0; i + 14 <= stripped.size(); ++i) {
    if (std::memcmp(stripped.data() + i, "__nv_relfatbin", 14) == 0) stripped[i] = 'X';
    if (i + 10 <= stripped.size() && std::memcmp(stripped.data() + i, ".nv_fatbin", 10) == 0) {
      stripped[i] = 'X';
    }
  }
  EXPECT_EQ(FatbinOfObject(stripped).status().code(), Code::kNoBinaryForGpu);
}

TEST(ArchiveTest, ListsMembersWithTheirNames) {
  const Bytes object = LoadObject();
  std::ifstream in(std::string(PVGPU_FATBIN_TESTDATA) + "/scale_rdc.a", std::ios::binary);
  const Bytes archive(std::istreambuf_iterator<char>(in), {});
  if (object.empty() || archive.empty()) GTEST_SKIP() << "test archive not built (no nvcc)";
  auto members = ArchiveMembers(archive);
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, "scale_rdc.o");
  EXPECT_EQ((*members)[1].name, "a_member_with_a_long_name.o");
  for (const auto& member : *members) {
    EXPECT_TRUE(Bytes(member.data.begin(), member.data.end()) == object) << member.name;
  }
  EXPECT_EQ(ArchiveMembers(object).status().code(), Code::kInvalidImage);
  for (size_t n = 8; n < archive.size(); n += 13) {
    // A cut inside a member fails; one at a member's end is a shorter, valid archive.
    auto cut = ArchiveMembers(std::span(archive).first(n));
    if (cut.ok()) EXPECT_LT(cut->size(), 2u) << "a prefix of " << n << " bytes";
  }
}

class CompressModeTest : public testing::TestWithParam<const char*> {};

TEST_P(CompressModeTest, ExtractsPtx) {
  LOAD_OR_SKIP(image, GetParam());
  ExpectScalePtx(ExtractPtx(image), "sm_75");
}

INSTANTIATE_TEST_SUITE_P(Modes, CompressModeTest,
                         testing::Values("none", "default", "size", "speed", "balance",
                                         "compress_all", "mixed_compress_all"));

TEST(FatbinTest, SeesCompressionMethods) {
  LOAD_OR_SKIP(stored, "none");
  LOAD_OR_SKIP(lz4, "speed");
  LOAD_OR_SKIP(zstd, "size");
  auto entries = Parse(stored);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].compression, Compression::kNone);
  EXPECT_EQ((*entries)[0].kind, EntryKind::kPtx);
  EXPECT_EQ((*entries)[0].arch, 75u);
  entries = Parse(lz4);
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ((*entries)[0].compression, Compression::kLz4);
  entries = Parse(zstd);
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ((*entries)[0].compression, Compression::kZstd);
}

TEST(FatbinTest, PicksHighestPtxNotAboveMaxSm) {
  LOAD_OR_SKIP(image, "mixed");
  auto entries = Parse(image);
  ASSERT_TRUE(entries.ok());
  int ptx = 0, elf = 0;
  for (const auto& e : *entries) (e.kind == EntryKind::kPtx ? ptx : elf)++;
  EXPECT_EQ(ptx, 2);
  EXPECT_EQ(elf, 1);
  ExpectScalePtx(ExtractPtx(image, 90), "sm_80");
  ExpectScalePtx(ExtractPtx(image, 80), "sm_80");
  ExpectScalePtx(ExtractPtx(image, 79), "sm_75");
  EXPECT_EQ(ExtractPtx(image, 70).status().code(), Code::kNoBinaryForGpu);
}

TEST(FatbinTest, ElfEntryContentsAreACubin) {
  LOAD_OR_SKIP(image, "mixed");
  auto entries = Parse(image);
  ASSERT_TRUE(entries.ok());
  for (const auto& e : *entries) {
    if (e.kind != EntryKind::kElf) continue;
    auto contents = Contents(e);
    ASSERT_TRUE(contents.ok());
    EXPECT_EQ(contents->substr(0, 4), "\x7f" "ELF");
    EXPECT_EQ(e.arch, 80u);
  }
}

TEST(FatbinTest, SassOnlyIsNoBinaryForGpu) {
  LOAD_OR_SKIP(image, "sm_only");
  auto ptx = ExtractPtx(image);
  EXPECT_EQ(ptx.status().code(), Code::kNoBinaryForGpu) << ptx.status().ToString();
  // The error names the machine code it found, so that a user sees why it cannot run.
  EXPECT_EQ(ptx.status().message(), "fatbin holds no PTX, only machine code for sm_80");
}

TEST(FatbinTest, TrailingBytesAreIgnored) {
  LOAD_OR_SKIP(image, "default");
  Bytes padded = image;
  padded.insert(padded.end(), {0, 0, 0, 0, 0, 0, 0, 0});
  ExpectScalePtx(ExtractPtx(padded), "sm_75");
}

TEST(FatbinTest, EveryTruncationIsRejected) {
  for (const char* name : {"default", "speed", "none", "mixed"}) {
    LOAD_OR_SKIP(image, name);
    for (size_t n = 0; n < image.size(); ++n) {
      auto ptx = ExtractPtx(std::span(image).first(n));
      ASSERT_FALSE(ptx.ok()) << name << " cut to " << n;
      EXPECT_EQ(ptx.status().code(), Code::kInvalidImage) << name << " cut to " << n;
    }
  }
}

// Flipping any single byte must give a clean answer: PTX, or an error, never a crash (run
// under ASan in the sanitizer build; the fuzzer goes further).
TEST(FatbinTest, SingleByteCorruptionsAreHandled) {
  for (const char* name : {"default", "speed", "mixed"}) {
    LOAD_OR_SKIP(image, name);
    for (size_t i = 0; i < image.size(); ++i) {
      for (uint8_t x : {0x01, 0x80, 0xff}) {
        Bytes bad = image;
        bad[i] ^= x;
        auto ptx = ExtractPtx(bad);
        if (!ptx.ok()) {
          EXPECT_TRUE(ptx.status().code() == Code::kInvalidImage ||
                      ptx.status().code() == Code::kNoBinaryForGpu)
              << name << " byte " << i << ": " << ptx.status().ToString();
        }
      }
    }
  }
}

// Hand-built containers for the header checks, independent of nvcc.
Bytes Container(uint64_t fat_size_field, const Bytes& body) {
  Bytes out(16, 0);
  const uint32_t magic = kMagic;
  const uint16_t version = 1, header_size = 16;
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &version, 2);
  std::memcpy(out.data() + 6, &header_size, 2);
  std::memcpy(out.data() + 8, &fat_size_field, 8);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Bytes PtxEntry(const std::string& text, uint64_t flags, uint64_t decompressed,
               uint32_t compressed, uint64_t payload_size_field) {
  Bytes entry(0x50, 0);
  const uint16_t kind = 1, version = 0x101;
  const uint32_t header_size = 0x50, arch = 75;
  std::memcpy(entry.data(), &kind, 2);
  std::memcpy(entry.data() + 2, &version, 2);
  std::memcpy(entry.data() + 4, &header_size, 4);
  std::memcpy(entry.data() + 8, &payload_size_field, 8);
  std::memcpy(entry.data() + 0x10, &compressed, 4);
  std::memcpy(entry.data() + 0x1c, &arch, 4);
  std::memcpy(entry.data() + 0x28, &flags, 8);
  std::memcpy(entry.data() + 0x38, &decompressed, 8);
  entry.insert(entry.end(), text.begin(), text.end());
  return entry;
}

TEST(FatbinTest, HandBuiltStoredEntry) {
  const std::string text = ".version 9.0\n.target sm_75\n";
  Bytes body = PtxEntry(text + '\0', 0x11, 0, 0, text.size() + 1);
  auto ptx = ExtractPtx(Container(body.size(), body));
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_EQ(*ptx, text);
}

TEST(FatbinTest, RejectsHostileSizes) {
  const std::string text = "x";
  const uint64_t huge = ~uint64_t{0} - 8;
  // Container size past the end, and so large that header + size overflows.
  Bytes body = PtxEntry(text, 0x11, 0, 0, 1);
  EXPECT_EQ(ExtractPtx(Container(body.size() + 1, body)).status().code(), Code::kInvalidImage);
  EXPECT_EQ(ExtractPtx(Container(huge, body)).status().code(), Code::kInvalidImage);
  // Entry payload size that would wrap the offset.
  body = PtxEntry(text, 0x11, 0, 0, huge);
  EXPECT_EQ(ExtractPtx(Container(body.size(), body)).status().code(), Code::kInvalidImage);
  // Decompressed size over the cap, compressed size over the payload, two methods at once.
  body = PtxEntry(text, 0x8011, kMaxDecompressedSize + 1, 1, 1);
  EXPECT_EQ(ExtractPtx(Container(body.size(), body)).status().code(), Code::kInvalidImage);
  body = PtxEntry(text, 0x8011, 16, 2, 1);
  EXPECT_EQ(ExtractPtx(Container(body.size(), body)).status().code(), Code::kInvalidImage);
  body = PtxEntry(text, 0xa011, 16, 1, 1);
  EXPECT_EQ(ExtractPtx(Container(body.size(), body)).status().code(), Code::kInvalidImage);
  // Garbage where a zstd frame or an LZ4 block should be.
  body = PtxEntry(text, 0x8011, 16, 1, 1);
  EXPECT_EQ(ExtractPtx(Container(body.size(), body)).status().code(), Code::kInvalidImage);
  body = PtxEntry(text, 0x2011, 16, 1, 1);
  EXPECT_EQ(ExtractPtx(Container(body.size(), body)).status().code(), Code::kInvalidImage);
  EXPECT_EQ(ExtractPtx(Bytes{0x50, 0xed, 0x55}).status().code(), Code::kInvalidImage);
  EXPECT_EQ(ExtractPtx(Bytes(64, 0)).status().code(), Code::kInvalidImage);
}

TEST(FatbinTest, SeedCorpusParses) {
  int seeds = 0;
  for (const auto& file : std::filesystem::directory_iterator(PVGPU_FATBIN_SEEDS)) {
    std::ifstream in(file.path(), std::ios::binary);
    const Bytes image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string ext = file.path().extension();
    if (ext == ".o") {  // a host object: its embedded device code
      auto fatbin = FatbinOfObject(image);
      ASSERT_TRUE(fatbin.ok()) << file.path();
      EXPECT_TRUE(Parse(*fatbin).ok()) << file.path();
    } else if (ext == ".a") {  // a static library of such objects
      auto members = ArchiveMembers(image);
      ASSERT_TRUE(members.ok()) << file.path();
      for (const auto& member : *members) EXPECT_TRUE(FatbinOfObject(member.data).ok());
    } else {
      EXPECT_TRUE(Parse(image).ok()) << file.path();
    }
    ++seeds;
  }
  EXPECT_GE(seeds, 3);
}

}  // namespace
}  // namespace pvgpu::fatbin
