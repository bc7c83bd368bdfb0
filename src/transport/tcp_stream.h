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
  // Writes from `pieces` in order, as much as the stream takes now, with one system call where
  // the stream can (plain TCP). This default writes from the first non-empty piece only.
  virtual IoResult Writev(std::span<const std::span<const uint8_t>> pieces);
  // Whether a Read on one thread and a Write on another may run at the same time (plain TCP);
  // a TLS stream's one SSL object allows only one call at a time.
  virtual bool duplex() const { return false; }
  // Pushes out what writes left buffered (TLS gathers records into large socket writes):
  // kDone when all is on the socket, kWantWrite when it is full. Writers call it when they
  // stop writing.
  virtual IoResult Flush() { return {IoResult::kDone, 0, {}}; }
  // Says goodbye at the stream level (TLS close_notify; FIN) after the last write.
  virtual void ShutdownWrite() = 0;
  // What protects the bytes, for logs: "" for plain TCP, else the cipher suite and whether the
  // kernel or this process runs it.
  virtual std::string Security() const { return ""; }
  // Whether bytes already taken off the socket wait inside the stream (TLS records read
  // ahead): poll() does not see those, so a reader must not sleep on the socket while there
  // are. A stream that never buffers input (plain TCP) also says that a short read emptied the
  // socket: buffers_input() false.
  virtual bool buffers_input() const { return true; }
  virtual bool HasBufferedInput() const { return false; }
  // Whether the kernel seals and opens the records (kernel TLS): the socket then carries
  // nothing but TLS, and a probe cannot fall back to plain bytes on it.
  virtual bool kernel_tls() const { return false; }
  virtual int fd() const = 0;
};

// A plain TCP connection (takes ownership of `fd`, which must be non-blocking).
std::unique_ptr<ByteStream> MakePlainStream(UniqueFd fd);

// OpenSSL writes to the socket with write(2), which raises SIGPIPE when the peer is gone; in a
// guest that would kill the application (whose SIGPIPE disposition is its own business) instead
// of failing its calls with DEVICE_UNAVAILABLE. Once set-up is over, callers' threads write too
// (stream_endpoint.h), so a TLS stream in user space sends its records with send(MSG_NOSIGNAL)
// (tls_stream.cc), as the plain stream does; the stream endpoint's I/O thread keeps SIGPIPE
// blocked for good. What still writes with write(2) holds one of these: the TLS handshake and
// WriteAll (set-up, on the caller's thread) and every call of a kernel TLS stream. It blocks
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
