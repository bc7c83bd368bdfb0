// Helpers shared by the Unix channel tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/channel.h"

namespace pvgpu::transport::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Socket() const { return path_ + "/pvgpud.sock"; }

 private:
  std::string path_;
};

// A listener plus one guest connected to it from another thread, and the host's end.
struct Connection {
  std::unique_ptr<UnixListener> listener;
  std::unique_ptr<Endpoint> guest;
  std::unique_ptr<Endpoint> host;
};
// Fails the current test (ADD_FAILURE) and returns nulls on error.
Connection Connect(const std::string& socket_path, size_t ring_bytes = 64u << 10);

// Deterministic bytes for message `seq` of length `size`, and its check.
std::vector<uint8_t> Pattern(uint64_t seq, size_t size);
bool MatchesPattern(const std::vector<uint8_t>& message, uint64_t seq);

// User + system CPU time of the whole process, in seconds.
double ProcessCpuSeconds();
double NowSeconds();

}  // namespace pvgpu::transport::testing
