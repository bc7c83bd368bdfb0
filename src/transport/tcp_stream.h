// A non-blocking byte stream under the remote endpoint: plain TCP here, TLS in tls_stream.h.
// One thread at a time drives a stream (OpenSSL's SSL objects are not safe for a read on one
// thread and a write on another), so the endpoint's I/O thread owns it once set-up is over.
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/status.h"
#include "transport/fd_util.h"

namespace pvgpu::transport::internal {

struct IoResult {
  enum Kind { kDone, kWantRead, kWantWrite, kEof, kError };
  Kind kind = kDone;
  size_t bytes = 0;   // kDone: bytes moved (> 0)
  std::string error;  // kError: the reason
};

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual IoResult Read(uint8_t* data, size_t size) = 0;
  virtual IoResult Write(const uint8_t* data, size_t size) = 0;
  // Says goodbye at the stream level (TLS close_notify; FIN) after the last write.
  virtual void ShutdownWrite() = 0;
  virtual int fd() const = 0;
};

// A plain TCP connection (takes ownership of `fd`, which must be non-blocking).
std::unique_ptr<ByteStream> MakePlainStream(UniqueFd fd);

// OpenSSL writes to the socket with write(2), which raises SIGPIPE when the peer is gone; in a
// guest that would kill the application (whose SIGPIPE disposition is its own business) instead
// of failing its calls with DEVICE_UNAVAILABLE. The stream endpoint's I/O thread, which does all
// reads and writes once set-up is over, keeps SIGPIPE blocked for good (tcp_endpoint.cc). Set-up
// runs on the caller's thread: the TLS handshake and WriteAll hold one of these, which blocks
// SIGPIPE in the calling thread and, before restoring the mask, takes back a SIGPIPE the thread
// raised meanwhile (POSIX keeps a signal raised by a thread's own write pending for that
// thread), as send(MSG_NOSIGNAL) would have.
class ScopedNoSigpipe {
 public:
  ScopedNoSigpipe();
  ~ScopedNoSigpipe();
  ScopedNoSigpipe(const ScopedNoSigpipe&) = delete;
  ScopedNoSigpipe& operator=(const ScopedNoSigpipe&) = delete;

 private:
  sigset_t pipe_;
  sigset_t saved_;
  bool already_pending_ = false;
  bool blocked_ = false;
};

// Blocking helpers for connection set-up, bounded by `deadline` (kNotReady when it passes,
// kDeviceUnavailable when the peer hangs up).
Status WriteAll(ByteStream& stream, std::span<const uint8_t> bytes, const Deadline& deadline);
Status ReadExact(ByteStream& stream, std::span<uint8_t> bytes, const Deadline& deadline);

// Waits until `fd` is ready for what `kind` (kWantRead/kWantWrite) asks, or the deadline.
// Returns false on timeout.
bool PollFor(int fd, IoResult::Kind kind, const Deadline& deadline);

}  // namespace pvgpu::transport::internal
