// Small POSIX helpers for the Unix channel: an owning fd, deadlines, and records with attached
// descriptors (SCM_RIGHTS) on a SOCK_SEQPACKET socket.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace pvgpu::transport::internal {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A point in time to give up at; `timeout_ms < 0` never expires.
class Deadline {
 public:
  explicit Deadline(int timeout_ms);
  bool infinite() const { return infinite_; }
  bool expired() const;
  // Milliseconds left for poll(): -1 when infinite, rounded up so we never wake early.
  int PollTimeoutMs() const;
  std::chrono::steady_clock::time_point when() const { return when_; }

 private:
  bool infinite_;
  std::chrono::steady_clock::time_point when_;
};

// "what: strerror(errno)" with the given code.
Status ErrnoError(Code code, const std::string& what, int err);

// Sends one record with `fds` attached. MSG_NOSIGNAL: a dead peer is an error, not SIGPIPE.
Status SendRecord(int socket, std::span<const uint8_t> bytes, std::span<const int> fds);

// Receives one record of at most `capacity` bytes and up to `max_fds` descriptors (CLOEXEC),
// waiting until `deadline`; `wake_fd` (or -1) readable aborts with kDeviceUnavailable. A record
// longer than `capacity` or carrying more descriptors is an error (the fds are closed).
// Returns the record's size; the peer hanging up is kDeviceUnavailable, timeout kNotReady.
StatusOr<size_t> ReceiveRecord(int socket, uint8_t* buffer, size_t capacity, size_t max_fds,
                               std::vector<UniqueFd>* fds, const Deadline& deadline,
                               int wake_fd = -1);

}  // namespace pvgpu::transport::internal
