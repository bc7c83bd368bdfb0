#include "ptx/jit_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <llvm/Support/xxhash.h>

#include "common/byte_size.h"
#include "common/log.h"

namespace pvgpu::ptx {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'P', 'V', 'G', 'P', 'U', 'J', 'C', '\0'};
constexpr uint64_t kDefaultMax = 256ull << 20;

// The file's header; the key is repeated so that a file renamed by hand is not taken for
// another kernel's code.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t key_size;
  uint64_t object_size;
  uint64_t checksum;  // xxh3 of the object
};
static_assert(sizeof(Header) == 32);

uint64_t Checksum(std::string_view data) {
  return llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string DefaultDir() {
  const char* env = std::getenv("PVGPU_JIT_CACHE_DIR");
  if (env != nullptr) {
    if (std::string_view(env) == "off") return "";
    if (*env != '\0') return env;
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/pvgpu/jit";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/pvgpu/jit";
  return "";
}

}  // namespace

JitDiskCache& JitDiskCache::Get() {
  static JitDiskCache* cache = [] {
    uint64_t max = kDefaultMax;
    if (const char* env = std::getenv("PVGPU_JIT_CACHE_MAX"); env != nullptr && *env != '\0') {
      if (uint64_t v = 0; ParseByteSize(env, &v)) {
        max = v;
      } else {
        PVGPU_WARN("PVGPU_JIT_CACHE_MAX='" << env << "' is not a size; using 256M");
      }
    }
    return new JitDiskCache(DefaultDir(), max);
  }();
  return *cache;
}

JitDiskCache::JitDiskCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

std::string JitDiskCache::PathFor(std::string_view key) const {
  return dir_ + "/" + std::string(key) + ".o";
}

bool JitDiskCache::Prepare() {
  if (prepared_) return !broken_;
  prepared_ = true;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || ::access(dir_.c_str(), W_OK | X_OK) != 0) {
    PVGPU_WARN("ptx jit: cache directory " << dir_ << " is not usable ("
                                          << (ec ? ec.message() : std::strerror(errno))
                                          << "); compiled kernels are not kept on disk");
    broken_ = true;
  }
  return !broken_;
}

std::optional<std::string> JitDiskCache::Load(std::string_view key) {
  if (!enabled()) return std::nullopt;
  const std::string path = PathFor(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::string data;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
            static_cast<uint64_t>(st.st_size) <= max_bytes_ + sizeof(Header) + 4096;
  if (ok) {
    data.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < data.size()) {
      ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ok = got == data.size();
  }
  if (ok) ::futimens(fd, nullptr);  // most recently used
  ::close(fd);
  Header h{};
  if (ok && data.size() >= sizeof(Header)) {
    std::memcpy(&h, data.data(), sizeof h);
    ok = std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 && h.version == kFormatVersion &&
         h.key_size == key.size() &&
         data.size() == sizeof(Header) + h.key_size + h.object_size &&
         std::string_view(data).substr(sizeof(Header), h.key_size) == key;
  } else {
    ok = false;
  }
  std::string_view object;
  if (ok) {
    object = std::string_view(data).substr(sizeof(Header) + h.key_size);
    ok = Checksum(object) == h.checksum;
  }
  if (!ok) {
    PVGPU_WARN("ptx jit: cache entry " << path << " is damaged; removing it");
    ::unlink(path.c_str());
    return std::nullopt;
  }
  return std::string(object);
}

void JitDiskCache::Store(std::string_view key, std::string_view object) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> l(mu_);
  if (!Prepare()) return;
  if (sizeof(Header) + key.size() + object.size() > max_bytes_) return;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kFormatVersion;
  h.key_size = static_cast<uint32_t>(key.size());
  h.object_size = object.size();
  h.checksum = Checksum(object);
  std::string tmp = dir_ + "/.tmp-XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    PVGPU_WARN("ptx jit: cannot write to cache " << dir_ << ": " << std::strerror(errno));
    return;
  }
  bool ok = WriteAll(fd, &h, sizeof h) && WriteAll(fd, key.data(), key.size()) &&
            WriteAll(fd, object.data(), object.size());
  ::fchmod(fd, 0644);
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), PathFor(key).c_str()) != 0) {
    PVGPU_WARN("ptx jit: cannot write to cache " << dir_ << ": " << std::strerror(errno));
    ::unlink(tmp.c_str());
    return;
  }
  Trim();
}

uint64_t JitDiskCache::SizeForTest() {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::error_code sec;
    if (e.is_regular_file(sec)) total += e.file_size(sec);
  }
  return total;
}

void JitDiskCache::Trim() {
  struct Entry {
    std::string path;
    uint64_t size;
    fs::file_time_type time;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::error_code sec;
    if (!e.is_regular_file(sec)) continue;
    const std::string name = e.path().filename().string();
    const uint64_t size = e.file_size(sec);
    if (sec) continue;
    auto time = e.last_write_time(sec);
    if (sec) continue;
    // Temporary files of writers that died: removed once they are an hour old.
    if (name.rfind(".tmp-", 0) == 0) {
      if (fs::file_time_type::clock::now() - time > std::chrono::hours(1)) ::unlink(e.path().c_str());
      continue;
    }
    if (name.size() < 3 || name.compare(name.size() - 2, 2, ".o") != 0) continue;
    entries.push_back({e.path().string(), size, time});
    total += size;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.time < b.time; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    // Another process may have removed it already; either way it no longer counts.
    ::unlink(e.path.c_str());
    total -= e.size;
  }
}

}  // namespace pvgpu::ptx
