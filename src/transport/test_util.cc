#include "transport/test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

namespace pvgpu::transport::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base ? base : "/tmp") + "/pvgpu-transport-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Connection Connect(const std::string& socket_path, size_t ring_bytes) {
  Connection c;
  auto listener = UnixListener::Listen(socket_path);
  if (!listener.ok()) {
    ADD_FAILURE() << listener.status().ToString();
    return c;
  }
  c.listener = std::move(listener).value();
  StatusOr<std::unique_ptr<Endpoint>> guest = Error(Code::kUnknown, "not run");
  std::thread connector([&] { guest = ConnectUnix(socket_path, {.ring_bytes = ring_bytes}); });
  auto host = c.listener->Accept();
  connector.join();
  if (!host.ok() || !guest.ok()) {
    ADD_FAILURE() << "host: " << host.status().ToString()
                  << " guest: " << guest.status().ToString();
    return c;
  }
  c.host = std::move(host).value();
  c.guest = std::move(guest).value();
  return c;
}

std::vector<uint8_t> Pattern(uint64_t seq, size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(seq * 2654435761u + i * 31);
  if (size >= 8) std::memcpy(bytes.data(), &seq, 8);
  return bytes;
}

bool MatchesPattern(const std::vector<uint8_t>& message, uint64_t seq) {
  return message == Pattern(seq, message.size());
}

double ProcessCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace pvgpu::transport::testing
