// The channel between one guest and the host (the VMBus role in the original).
//
// An Endpoint is one side of an ordered, bidirectional stream of framed messages plus a
// completion fence. The session layer above it (protocol/, host/, guest/client/) never knows
// which kind of channel it talks over:
//   - local:      Unix socket for set-up and fd passing, memfd shared memory holding two
//                 single-producer/single-consumer byte rings and the fence, eventfd doorbells;
//   - in-process: a pair of endpoints joined in memory (tests, baselines);
//   - remote:     TCP with TLS and a token (fences advance by message).
//
// Everything a peer writes is hostile to the reader: shared-memory indices and sizes are copied
// in and validated before use; a violation is a fatal channel error for that endpoint only.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/function_ref.h"
#include "common/status.h"

namespace pvgpu::transport {

// Transport-level version, checked during connection set-up (before any protocol message).
inline constexpr uint32_t kTransportVersion = 1;

// A received message in place: its bytes are `first` followed by `second` (empty unless the
// message wraps around the end of a ring).
struct MessageView {
  std::span<const uint8_t> first;
  std::span<const uint8_t> second;

  size_t size() const { return first.size() + second.size(); }
  // The bytes from `offset` on (offset <= size()).
  MessageView Tail(size_t offset) const {
    if (offset >= first.size()) return {second.subspan(offset - first.size()), {}};
    return {first.subspan(offset), second};
  }
  // Copies `n` bytes from the start (n <= size()) to `out`.
  void CopyPrefix(void* out, size_t n) const {
    const size_t a = std::min(n, first.size());
    if (a != 0) std::memcpy(out, first.data(), a);
    if (n > a) std::memcpy(static_cast<uint8_t*>(out) + a, second.data(), n - a);
  }
};

// Thread safety: every method may be called from any thread. Concurrent Sends are serialized
// with each other, as are concurrent Receives and ReceiveFds; a Receive, a Send blocked on a
// full ring and any number of WaitFence calls may all wait at the same time.
class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Largest message Send accepts (the sum of all parts). Callers chunk bulk data below it.
  virtual size_t max_message_size() const = 0;

  // Appends one message, the concatenation of `parts`, to the outgoing stream. Returns as soon
  // as the bytes are in the ring (it does not wait for the peer to read them); blocks only while
  // the ring is full. Errors: kDeviceUnavailable when the peer is gone or the channel is broken
  // (also while blocked on a full ring), kInvalidValue (not fatal) for a message over
  // max_message_size(), kInvalidValue (fatal) when the peer corrupted the ring.
  //
  // A full ring never times out. To avoid two sides blocking on each other's full rings, the
  // protocol must keep the rule that each side drains its incoming ring independently of its
  // sends: the guest reads replies on the thread (or after the call) that waits for them and
  // asynchronous commands get no replies; the host never sends unsolicited bulk data. A host
  // that wants a bound anyway runs Send on the session thread and Closes the endpoint from a
  // watchdog, which makes the blocked Send return.
  virtual Status Send(std::span<const std::span<const uint8_t>> parts) = 0;
  Status Send(std::span<const uint8_t> message) {
    std::span<const uint8_t> parts[] = {message};
    return Send(parts);
  }

  // Appends one message made of `parts` followed by `fill_bytes` that `fill` writes in place,
  // so that bulk data (device memory read for a DtoH copy) goes straight into the outgoing
  // ring instead of through a buffer of the sender's first. `fill(piece, offset)` is called for
  // pieces that cover [0, fill_bytes) in order (two when the bytes wrap around the ring's
  // end). When it fails nothing is sent and its error is returned; otherwise as Send. This
  // default stages the bytes in a buffer and calls Send.
  // `fill` must not send on this endpoint (the send is under way).
  using Fill = FunctionRef<Status(std::span<uint8_t> piece, size_t offset)>;
  virtual Status SendFilled(std::span<const std::span<const uint8_t>> parts, size_t fill_bytes,
                            Fill fill) {
    if (fill_bytes > max_message_size()) {
      return Error(Code::kInvalidValue, "message of " + std::to_string(fill_bytes) +
                                            " bytes exceeds the channel maximum " +
                                            std::to_string(max_message_size()));
    }
    std::unique_ptr<uint8_t[]> staged(new uint8_t[fill_bytes == 0 ? 1 : fill_bytes]);
    if (fill_bytes != 0) PVGPU_TRY(fill({staged.get(), fill_bytes}, 0));
    std::vector<std::span<const uint8_t>> all(parts.begin(), parts.end());
    all.emplace_back(staged.get(), fill_bytes);
    return Send(all);
  }

  // Takes the next incoming message (copied out of shared memory, so the caller may validate it
  // at leisure). timeout_ms < 0 waits forever. Waiting spins briefly, then sleeps; an idle
  // endpoint burns no CPU. Errors: kNotReady on timeout, kDeviceUnavailable when the peer is
  // gone, kInvalidValue (fatal) when the peer corrupted the ring.
  virtual Status Receive(std::vector<uint8_t>* message, int timeout_ms = -1) = 0;

  // Takes the next incoming message and shows it to `visit` where it lies, without copying it
  // first: on the local channel the bytes stay in the shared ring (in two pieces when they wrap
  // around its end) until `visit` returns, and the peer may rewrite them meanwhile. So `visit`
  // copies out, once, whatever it will check and then rely on, and takes the rest (bulk data)
  // as it is. Channels without a ring receive into `*scratch` and show that. Errors as Receive.
  using Visit = FunctionRef<void(const MessageView&)>;
  virtual Status ReceiveView(std::vector<uint8_t>* scratch, Visit visit, int timeout_ms = -1) {
    PVGPU_TRY(Receive(scratch, timeout_ms));
    visit(MessageView{*scratch, {}});
    return Status::Ok();
  }

  // Completion fence. The host publishes the sequence number of the last command it finished;
  // the guest reads it without a syscall and can wait for a value.
  virtual void PublishFence(uint64_t value) = 0;                      // host side
  virtual uint64_t ReadFence() const = 0;                             // guest side
  virtual Status WaitFence(uint64_t value, int timeout_ms = -1) = 0;  // guest side
  // Guest side: waits up to `window` for the fence by spinning only, never asleep on the
  // doorbell (where the host would ring at every fence it publishes): for waits that are
  // probably short. Channels without shared memory only look.
  virtual bool SpinForFence(uint64_t value, std::chrono::microseconds /*window*/) {
    return ReadFence() >= value;
  }
  // How many errors the host has recorded for the session's work, published before the fence
  // that covers the work (host side), or kErrorCountUnknown when the host cannot vouch for them
  // without being asked (asynchronous adapters collect faults only when synchronized). With it
  // a guest synchronizing finished work can skip the round trip when the count has not moved.
  // Channels without shared memory do not carry it: ReadErrorCount is then nullopt.
  static constexpr uint64_t kErrorCountUnknown = ~uint64_t{0};
  virtual void PublishErrorCount(uint64_t /*count*/) {}                            // host side
  virtual std::optional<uint64_t> ReadErrorCount() const { return std::nullopt; }  // guest side

  // Passes a file descriptor (a memfd for pinned host memory) to the peer, in order with
  // other SendFd calls. Not every channel kind supports it (kNotSupported).
  virtual Status SendFd(int fd) = 0;
  // Takes the next file descriptor sent by the peer; the caller owns it.
  virtual StatusOr<int> ReceiveFd(int timeout_ms = -1) = 0;

  // Marks the channel closed; the peer's pending and later calls fail with kDeviceUnavailable.
  virtual void Close() = 0;

  // "unix:/path", "inprocess", "tcp://..." (for logs).
  virtual std::string Describe() const = 0;

  // Credentials of the peer process where the channel knows them (SO_PEERCRED on the host side
  // of a Unix channel); -1 otherwise. The host lists guest processes with these.
  virtual int peer_pid() const { return -1; }
  virtual int peer_uid() const { return -1; }
};

struct ShmOptions {
  size_t ring_bytes = 8u << 20;   // each direction; a power of two, 64 KiB .. 1 GiB
  int connect_timeout_ms = 5000;  // for the host's answer to the set-up record
};

// Unix channel limits. A message may use half a ring: max_message_size() == ring_bytes / 2.
inline constexpr size_t kMinRingBytes = 64u << 10;
inline constexpr size_t kMaxRingBytes = 1u << 30;

// Guest side of the local channel: connects to a pvgpud Unix socket, creates and shares the
// memfd rings and doorbells.
StatusOr<std::unique_ptr<Endpoint>> ConnectUnix(const std::string& path,
                                                const ShmOptions& options = {});

// Host side of the local channel.
class UnixListener {
 public:
  // Binds and listens; replaces a stale socket file left by a dead daemon, but refuses to
  // steal one that a live daemon still answers on (kIllegalState).
  static StatusOr<std::unique_ptr<UnixListener>> Listen(const std::string& path, int mode = 0666);
  ~UnixListener();

  // Accepts one guest and completes the transport set-up (validating its memfd, seals, sizes
  // and doorbells). A guest that fails set-up is dropped with a logged reason and an error:
  // kInvalidValue when rejected, kNotReady when it hangs up or stays silent past the set-up
  // timeout. Only Shutdown makes Accept return kDeviceUnavailable; an accept loop continues on
  // any other error.
  //
  // Threading: the set-up runs inside Accept, bounded by handshake_timeout_ms (default 5 s) and
  // cut short by Shutdown, so a silent client stalls a single-threaded accept loop for at most
  // that long. Daemons that want none of that use AcceptPending (only accept(), never blocks
  // once fd() is readable) and run PendingGuest::Complete on a per-connection thread.
  StatusOr<std::unique_ptr<Endpoint>> Accept();

  // One accepted connection whose transport set-up has not run yet. Move-only.
  class PendingGuest {
   public:
    PendingGuest(PendingGuest&& other) noexcept;
    PendingGuest& operator=(PendingGuest&& other) noexcept;
    ~PendingGuest();
    int peer_pid() const { return pid_; }
    // Receives and validates the guest's set-up record, answers it, and returns the endpoint.
    StatusOr<std::unique_ptr<Endpoint>> Complete(int timeout_ms = 5000);

   private:
    friend class UnixListener;
    PendingGuest(int fd, int pid, int uid, std::string path)
        : fd_(fd), pid_(pid), uid_(uid), path_(std::move(path)) {}
    int fd_;
    int pid_;
    int uid_;
    std::string path_;
  };
  StatusOr<PendingGuest> AcceptPending();
  void set_handshake_timeout_ms(int ms) { handshake_timeout_ms_ = ms; }
  // A descriptor that becomes readable when Accept would not block (for poll loops).
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Makes a blocked Accept return kDeviceUnavailable (shutdown).
  void Shutdown();

 private:
  UnixListener(int fd, int wake_fd, std::string path)
      : fd_(fd), wake_fd_(wake_fd), path_(std::move(path)) {}
  int fd_;
  int wake_fd_;
  std::string path_;
  int handshake_timeout_ms_ = 5000;
  uint64_t device_ = 0;  // identity of the socket file we bound, so that ~UnixListener
  uint64_t inode_ = 0;   // never unlinks a successor's socket
};

// Checks that `fd` is a memfd sealed against shrinking (F_SEAL_SHRINK; seals can never be
// removed) that holds at least `min_bytes`, so that a mapping of `min_bytes` of it can never
// fault with SIGBUS because the peer truncated the file. Hosts call it on every memfd a guest
// passes (pinned host memory) before mmap. kInvalidValue with the reason otherwise.
Status VerifySealedMemfd(int fd, uint64_t min_bytes);

// Remote channel (tcp_*.cc, tls_*.cc; docs/remote.md): "tls://HOST:PORT" with TLS 1.3 and a
// shared-secret token, or "tcp://HOST:PORT" without either, allowed on loopback only. The same
// command stream as the local channel in length-prefixed frames; the fence advances by message;
// SendFd/ReceiveFd are kNotSupported. A peer silent for dead_after_ms (heartbeats every
// heartbeat_ms) breaks the channel with kDeviceUnavailable.
struct RemoteOptions {
  std::string token;          // guest: presented; host: required of every guest (tls://)
  std::string tls_ca_file;    // guest: CA certificates (PEM); empty: the system's store
  std::string tls_cert_file;  // host: certificate chain (PEM)
  std::string tls_key_file;   // host: private key (PEM)
  // TLS 1.3 cipher suites in order of preference (OpenSSL's syntax); empty: AES-GCM first
  // where the CPU accelerates it, else ChaCha20-Poly1305 first (tls_cipher.h).
  std::string tls_ciphersuites;
  int connect_timeout_ms = 5000;  // TCP connect, TLS handshake and set-up record, each side
  int heartbeat_ms = 1000;
  int dead_after_ms = 5000;
  size_t max_message_size = 4u << 20;
};

// True for "tcp://..." and "tls://...".
bool IsRemoteAddress(const std::string& address);

// Reads a token file (first line, trimmed; 16 to 1024 characters).
StatusOr<std::string> ReadRemoteToken(const std::string& path);

// The guest's options from PVGPU_TOKEN_FILE (else PVGPU_TOKEN), PVGPU_TLS_CA and
// PVGPU_TLS_CIPHERSUITES.
StatusOr<RemoteOptions> GuestRemoteOptionsFromEnvironment();

// Guest side: connects, runs TLS (checking the host's certificate against the CA and the host
// name or IP in `address`) and presents the token. kNoDevice when nothing answers,
// kNotPermitted for an untrusted certificate or a rejected token ("token rejected").
StatusOr<std::unique_ptr<Endpoint>> ConnectRemote(const std::string& address,
                                                  const RemoteOptions& options);

// The path to a remote host without pvgpu on it, for benchmarks to measure against: a
// connection set up as a guest's is (TCP, TLS, token), on which the host then serves plain TCP
// (tcp_probe.h): an 8-byte echo, a sink and a source. After set-up the bytes are not encrypted
// (the host only echoes, discards or sends zeros, for at most two minutes), so the figures are
// the raw socket's between the same two ends; for TLS's own cost see tls_cipher.h. Not over
// kernel TLS (kNotSupported), where the kernel seals every byte.
class RemotePathProbe {
 public:
  static StatusOr<std::unique_ptr<RemotePathProbe>> Connect(const std::string& address,
                                                            const RemoteOptions& options);
  ~RemotePathProbe();
  // Mean microseconds of `count` 8-byte ping-pongs.
  StatusOr<double> RoundTripMicros(int count);
  // Bytes per second of `bytes` sent to the host (until it says all arrived) and from it.
  StatusOr<double> SendBytesPerSecond(uint64_t bytes);
  StatusOr<double> ReceiveBytesPerSecond(uint64_t bytes);
  // The TLS cipher suite set-up used ("" for tcp://), as ByteStream::Security says it.
  std::string security() const;
  // One core's rate sealing 16 KiB records with TLS 1.3 suite `suite` (the part of
  // security() before any comma), in bytes per second, measured in this process for about
  // `seconds`: a TLS channel's other limit.
  static StatusOr<double> CipherBytesPerSecond(const std::string& suite, double seconds);
  struct State;

 private:
  explicit RemotePathProbe(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Host side. Listen refuses tcp:// on a non-loopback address (kNotPermitted) and tls:// without
// certificate, key and token (kInvalidValue). Connections are set up (TLS, token) on their own
// threads, bounded by connect_timeout_ms; refused ones are logged with the reason and never
// reach Accept.
class RemoteListener {
 public:
  static StatusOr<std::unique_ptr<RemoteListener>> Listen(const std::string& address,
                                                          const RemoteOptions& options);
  ~RemoteListener();
  // Waits for the next guest that passed set-up; kDeviceUnavailable after Shutdown.
  StatusOr<std::unique_ptr<Endpoint>> Accept();
  void Shutdown();
  // The address with the port actually bound (for port 0).
  const std::string& address() const;
  struct State;

 private:
  explicit RemoteListener(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Two endpoints joined in memory: what one sends the other receives.
std::pair<std::unique_ptr<Endpoint>, std::unique_ptr<Endpoint>> CreateInProcessPair(
    size_t max_message_size = 4u << 20);

}  // namespace pvgpu::transport
