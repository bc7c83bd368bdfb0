// The remote channel's Endpoint (see tcp_endpoint.h for what it carries), shared by
// stream_endpoint.cc (what callers see) and stream_endpoint_io.cc (moving bytes).
//
// Who moves the bytes. Two roles guard the stream, each held by one thread at a time and
// handed over only between frames: the write role (flushing queued frames, or writing one
// message straight from the caller's buffers) and the read role (reading, decoding, handing
// out what arrived). The threads that wait take them themselves, so that on the path of a
// synchronous call no other thread has to be woken: a Receive or WaitFence caller flushes what
// is queued and reads its answer off the socket; a Send of bulk data writes it from the
// caller's buffer (no staging copy), blocking while the socket is full; a lone small Send is
// written at once. Only a burst of small Sends (pipelined launches) is queued and left to the
// I/O thread, which is woken once per burst and writes it in a few large writes. The I/O
// thread also sends heartbeats, reads whatever waits when no one else reads (so silence can
// be told from a dead peer), and finishes output a caller handed over.
//
// Fences. The host's fence travels in kFence frames, coalesced: with any other output, when
// the host's reader runs out of input (the guest may be polling with a query), and at once
// when it reaches the value a waiting guest asked for with kFenceWanted. So a stream of
// posted work costs no fence frame per command, and a synchronize one round trip.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "transport/channel.h"
#include "transport/stream_frames.h"
#include "transport/tcp_endpoint.h"
#include "transport/tcp_stream.h"

namespace pvgpu::transport::internal {

class StreamEndpoint final : public Endpoint {
 public:
  StreamEndpoint(std::unique_ptr<ByteStream> stream, const StreamEndpointOptions& options);
  ~StreamEndpoint() override;

  size_t max_message_size() const override { return options_.max_message_size; }
  Status Send(std::span<const std::span<const uint8_t>> parts) override;
  using Endpoint::Send;
  Status SendFilled(std::span<const std::span<const uint8_t>> parts, size_t fill_bytes,
                    Fill fill) override;
  Status Receive(std::vector<uint8_t>* message, int timeout_ms) override;
  void PublishFence(uint64_t value) override;
  uint64_t ReadFence() const override;
  Status WaitFence(uint64_t value, int timeout_ms) override;
  bool SpinForFence(uint64_t value, std::chrono::microseconds window) override;
  Status SendFd(int) override;
  StatusOr<int> ReceiveFd(int) override;
  void Close() override;
  std::string Describe() const override { return options_.description; }

 private:
  using Clock = std::chrono::steady_clock;
  using Lock = std::unique_lock<std::mutex>;
  using Parts = std::span<const std::span<const uint8_t>>;

  // What a pass of writing or reading ended with.
  enum class Io {
    kDone,       // flush: nothing left (the write role was released); read: socket drained
    kMore,       // read: stopped early with more to read (round limit), go again
    kFull,       // read: the incoming queue is full, reading waits for Receive
    kWantRead,   // the stream needs to become readable (poll POLLIN) to go on
    kWantWrite,  // ... writable (POLLOUT)
    kFailed,     // the endpoint broke
  };

  // ---- stream_endpoint.cc: callers
  Status UsableLocked() const;
  // Waits until `ready` (checked first, so what arrived before a break is still delivered),
  // taking the read role (and flushing queued output) while it waits, if no one else has it.
  template <typename Ready>
  Status WaitFor(Lock& lock, const Deadline& deadline, Ready ready);
  // Takes the write role (waiting for it), writes the queued output and then the frame of
  // `parts` followed by `fill_bytes` from `fill`, blocking until all is written.
  Status SendDirect(Lock& lock, Parts parts, size_t fill_bytes, const Fill* fill);
  void PollForQuery();
  std::vector<uint8_t> AllocateBody(size_t size);

  // ---- stream_endpoint_io.cc: roles, passes, the I/O thread
  // The write role: free, or held by a caller, or handed to the I/O thread (which a waiting
  // caller may take back as long as the I/O thread has not begun).
  bool TakeWriteRoleLocked();
  bool IoHandoffPendingLocked() const { return writer_ && writer_is_io_ && !io_started_; }
  void HandWriteRoleToIoLocked();
  // Releases the write role, or hands it to the I/O thread if output is due meanwhile.
  void ReleaseWriteRoleLocked();
  // Queued frames, or a fence a waiting guest asked for.
  bool OutputDueLocked() const { return !pending_.empty() || FenceUrgentLocked(); }
  // Makes sure due output has a writer (hands it to the I/O thread if no one writes).
  void EnsureWriterLocked() {
    if (!writer_ && OutputDueLocked()) HandWriteRoleToIoLocked();
  }
  bool FenceUrgentLocked() const;
  // Appends a kFence frame to `out` when the published fence is newer than the last one sent.
  void AppendFenceLocked(ByteBuffer* out);
  void ReleaseReadRoleLocked();
  void WakeIoLocked();
  void WakeReaderLocked();
  void BreakLocked(Code code, const std::string& reason);
  void Break(Code code, const std::string& reason);
  // Write role: writes out_, then whatever is queued, until nothing is left (kDone, releasing
  // the role when `release`) or the stream is full (kWantWrite/kWantRead, role kept).
  Io Flush(bool release);
  // Write role: pushes out what the stream buffered (kDone, or where it waits).
  Io FlushStream();
  // Write role: writes out_ and then `rest` entirely, waiting for the socket as needed.
  Status WriteBlocking(Parts rest);
  // Waits (in poll) until the stream may take more, reading meanwhile if no one else reads.
  void WaitWritable(Io want);
  // Read role: reads what is there, hands it out, until the socket has no more. Sets
  // *read_bytes when it read any.
  Io ReadPass(bool* read_bytes = nullptr);
  void Deliver(FrameDecoder::Output& out);
  void Run();
  void Touch(std::atomic<int64_t>& when) {
    when.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
  Clock::time_point When(const std::atomic<int64_t>& when) const {
    return Clock::time_point(Clock::duration(when.load(std::memory_order_relaxed)));
  }

  std::unique_ptr<ByteStream> stream_;
  const StreamEndpointOptions options_;
  // Around the stream's calls: Read under read_mu_, Write under write_mu_ where the stream
  // allows a read and a write at once (plain TCP), else under read_mu_ too (TLS).
  std::mutex read_mu_;
  std::mutex write_mu_;
  std::mutex& write_mutex() { return stream_->duplex() ? write_mu_ : read_mu_; }
  UniqueFd io_wake_;              // eventfd: the I/O thread's doorbell
  UniqueFd reader_wake_;          // eventfd: a waiting caller's, while it holds the read role
  std::atomic<int64_t> last_rx_;  // when the peer was last heard (Clock ticks)
  std::atomic<int64_t> last_tx_;  // when bytes last left
  std::atomic<uint64_t> fence_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;  // waiters, Sends waiting for room or for the write role
  // Output.
  ByteBuffer pending_;   // frames queued for whoever holds the write role
  bool writer_ = false;  // the write role is held
  bool writer_is_io_ = false;
  bool io_started_ = false;        // the I/O thread began on what it was handed
  uint64_t fence_published_ = 0;   // host: the last PublishFence
  uint64_t fence_sent_ = 0;        // host: the value of the last fence frame queued
  std::set<uint64_t> peer_wants_;  // host: fence values waiting guests asked for, unsent
  uint64_t want_sent_ = 0;         // guest: the largest kFenceWanted queued
  Clock::time_point last_send_{};  // the previous Send (bursts are queued, not written)
  int sends_since_wait_ = 0;       // Sends since a caller last waited (for an answer)
  // Input.
  bool reader_ = false;  // the read role is held
  bool reader_is_io_ = false;
  bool reader_asleep_ = false;  // its holder is in poll, on its doorbell
  int waiters_ = 0;             // callers in WaitFor
  std::deque<std::vector<uint8_t>> incoming_;
  size_t incoming_bytes_ = 0;
  std::vector<std::vector<uint8_t>> spare_;  // received messages' vectors, for reuse
  Clock::time_point last_query_{};
  bool peer_said_goodbye_ = false;
  // State.
  bool io_asleep_ = false;
  bool io_wants_role_ = false;  // the I/O thread waits on cv_ for the read role
  bool closed_ = false;
  bool broken_ = false;
  Code broken_code_ = Code::kDeviceUnavailable;
  std::string broken_reason_;

  // The write role's: what it is writing (a TLS write that could not finish must be repeated
  // with the same bytes, by whoever holds the role next).
  ByteBuffer out_;
  size_t out_done_ = 0;
  bool unflushed_ = false;  // written to the stream, maybe still in its buffer
  // The read role's.
  FrameDecoder decoder_;
  ByteBuffer read_buffer_;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace pvgpu::transport::internal
