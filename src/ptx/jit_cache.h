// The compiling engine's on-disk cache of object code (jit.cc): a kernel compiled once is
// loaded, not compiled, by later processes on the same machine.
//
// An entry is one file, named by its key (a SHA-256 of everything the object code depends on:
// the kernel's unoptimized LLVM IR, the host CPU's name and features, the LLVM version and the
// engine's version), holding a header, the object code and a checksum of it. Files are written
// to a temporary name and renamed into place, so concurrent processes (several pvgpud, tests
// in parallel) see either no entry or a whole one; a file that fails its checks is removed and
// the kernel compiled again. The directory is kept under a size bound by removing the entries
// used least recently (a hit refreshes its file's time).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace pvgpu::ptx {

class JitDiskCache {
 public:
  // The process's cache, configured from the environment at first use:
  //   PVGPU_JIT_CACHE_DIR  the directory ("off" disables the cache); by default
  //                        $XDG_CACHE_HOME/pvgpu/jit, else $HOME/.cache/pvgpu/jit
  //   PVGPU_JIT_CACHE_MAX  the size bound in bytes, with an optional K, M or G suffix
  //                        (default 256M; K, M, G suffixes as in --memory)
  static JitDiskCache& Get();

  // An empty dir disables the cache.
  JitDiskCache(std::string dir, uint64_t max_bytes);

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }

  // The object code stored under key, if a whole, valid entry exists.
  std::optional<std::string> Load(std::string_view key);
  // Stores object code under key (best effort: a full disk or an unwritable directory costs a
  // log line, nothing else), then trims the directory to its bound.
  void Store(std::string_view key, std::string_view object);

  // Total size of the entries now in the directory.
  uint64_t SizeForTest();

  static constexpr uint32_t kFormatVersion = 1;

 private:
  std::string PathFor(std::string_view key) const;
  void Trim();
  bool Prepare();  // creates the directory once; false if it cannot be used

  std::string dir_;
  uint64_t max_bytes_;
  std::mutex mu_;
  bool prepared_ = false;
  bool broken_ = false;
};

}  // namespace pvgpu::ptx
