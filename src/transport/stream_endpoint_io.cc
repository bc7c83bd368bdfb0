// The remote channel's byte moving: the two roles, write and read passes, and the I/O thread
// (stream_endpoint.h explains who does what).
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

#include "transport/stream_endpoint.h"

namespace pvgpu::transport::internal {
namespace {

using std::chrono::milliseconds;

// The rest of a message body at least this large is read straight into the message.
constexpr size_t kDirectReadMin = 64u << 10;
// Reads per pass, so that a fast sender cannot keep a reader from its other duties.
constexpr int kReadRounds = 64;
// Fence values a host remembers a guest waiting for.
constexpr size_t kMaxFenceWants = 256;

void Ring(int eventfd) {
  const uint64_t one = 1;
  (void)!::write(eventfd, &one, sizeof(one));
}

}  // namespace

bool StreamEndpoint::TakeWriteRoleLocked() {
  if (writer_ && !IoHandoffPendingLocked()) return false;
  writer_ = true;
  writer_is_io_ = false;
  return true;
}

void StreamEndpoint::HandWriteRoleToIoLocked() {
  writer_ = true;
  writer_is_io_ = true;
  io_started_ = false;
  WakeIoLocked();
  if (io_wants_role_) cv_.notify_all();  // it waits on cv_, not in poll
}

void StreamEndpoint::ReleaseWriteRoleLocked() {
  if (OutputDueLocked() || out_done_ != out_.size() || unflushed_) {
    HandWriteRoleToIoLocked();
    return;
  }
  writer_ = false;
  writer_is_io_ = false;
  cv_.notify_all();
  if (closed_) WakeIoLocked();  // it waits for the role to say goodbye
}

bool StreamEndpoint::FenceUrgentLocked() const {
  return !peer_wants_.empty() && fence_published_ >= *peer_wants_.begin();
}

void StreamEndpoint::AppendFenceLocked(ByteBuffer* out) {
  if (fence_published_ <= fence_sent_) return;
  out->AppendValueFrame(kFence, fence_published_);
  fence_sent_ = fence_published_;
  // Every wait up to this value is answered.
  peer_wants_.erase(peer_wants_.begin(), peer_wants_.upper_bound(fence_sent_));
}

void StreamEndpoint::ReleaseReadRoleLocked() {
  reader_ = false;
  reader_is_io_ = false;
  reader_asleep_ = false;
  if (waiters_ > 0 || io_wants_role_) cv_.notify_all();
}

void StreamEndpoint::WakeIoLocked() {
  if (!io_asleep_) return;
  io_asleep_ = false;
  Ring(io_wake_.get());
}

void StreamEndpoint::WakeReaderLocked() {
  if (!reader_ || !reader_asleep_) return;
  reader_asleep_ = false;
  Ring(reader_is_io_ ? io_wake_.get() : reader_wake_.get());
}

void StreamEndpoint::BreakLocked(Code code, const std::string& reason) {
  if (broken_) return;
  broken_ = true;
  broken_code_ = code;
  broken_reason_ = reason + " (" + Describe() + ")";
  cv_.notify_all();
  // Everyone in poll on the socket or a doorbell wakes up and sees it.
  ::shutdown(stream_->fd(), SHUT_RDWR);
  Ring(io_wake_.get());
  Ring(reader_wake_.get());
}

void StreamEndpoint::Break(Code code, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  BreakLocked(code, reason);
}

StreamEndpoint::Io StreamEndpoint::Flush(bool release) {
  for (;;) {
    if (out_done_ == out_.size()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (broken_) return Io::kFailed;
        out_.clear();
        out_done_ = 0;
        if (!pending_.empty()) {
          out_.Swap(pending_);
          cv_.notify_all();  // Sends waiting for room
        }
        AppendFenceLocked(&out_);
        if (out_.empty() && !unflushed_) {
          if (release) ReleaseWriteRoleLocked();
          return Io::kDone;
        }
      }
      if (out_.empty()) {  // all written: push out what the stream buffered, then look again
        const Io flushed = FlushStream();
        if (flushed != Io::kDone) return flushed;
        continue;
      }
    }
    IoResult r;
    {
      std::lock_guard<std::mutex> io(write_mutex());
      r = stream_->Write(out_.data() + out_done_, out_.size() - out_done_);
    }
    switch (r.kind) {
      case IoResult::kDone:
        out_done_ += r.bytes;
        unflushed_ = true;
        Touch(last_tx_);
        break;
      case IoResult::kWantRead:
        return Io::kWantRead;
      case IoResult::kWantWrite:
        return Io::kWantWrite;
      default:
        Break(Code::kDeviceUnavailable,
              "connection lost while sending: " + (r.kind == IoResult::kEof ? "closed" : r.error));
        return Io::kFailed;
    }
  }
}

StreamEndpoint::Io StreamEndpoint::FlushStream() {
  IoResult r;
  {
    std::lock_guard<std::mutex> io(write_mutex());
    r = stream_->Flush();
  }
  switch (r.kind) {
    case IoResult::kDone:
      unflushed_ = false;
      return Io::kDone;
    case IoResult::kWantRead:
      return Io::kWantRead;
    case IoResult::kWantWrite:
      return Io::kWantWrite;
    default:
      Break(Code::kDeviceUnavailable, "connection lost while sending: " + r.error);
      return Io::kFailed;
  }
}

Status StreamEndpoint::WriteBlocking(Parts rest) {
  size_t part = 0;
  size_t offset = 0;  // into rest[part]
  std::vector<std::span<const uint8_t>> pieces;
  for (;;) {
    pieces.clear();
    if (out_done_ < out_.size())
      pieces.emplace_back(out_.data() + out_done_, out_.size() - out_done_);
    for (size_t i = part; i < rest.size(); ++i) {
      const auto piece = i == part ? rest[i].subspan(offset) : rest[i];
      if (!piece.empty()) pieces.push_back(piece);
    }
    if (pieces.empty()) {
      const Io flushed = FlushStream();
      if (flushed == Io::kDone) return Status::Ok();
      if (flushed == Io::kFailed) {
        std::lock_guard<std::mutex> lock(mu_);
        return Error(broken_code_, broken_reason_);
      }
      WaitWritable(flushed);
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_) return Error(broken_code_, broken_reason_);
      continue;
    }
    IoResult r;
    {
      std::lock_guard<std::mutex> io(write_mutex());
      r = stream_->Writev(pieces);
    }
    if (r.kind == IoResult::kDone) {
      Touch(last_tx_);
      unflushed_ = true;
      size_t moved = r.bytes;
      const size_t from_out = std::min(moved, out_.size() - out_done_);
      out_done_ += from_out;
      moved -= from_out;
      while (moved > 0 && part < rest.size()) {
        const size_t take = std::min(moved, rest[part].size() - offset);
        offset += take;
        moved -= take;
        if (offset == rest[part].size()) {
          ++part;
          offset = 0;
        }
      }
      continue;
    }
    if (r.kind == IoResult::kWantRead || r.kind == IoResult::kWantWrite) {
      WaitWritable(r.kind == IoResult::kWantRead ? Io::kWantRead : Io::kWantWrite);
      // A close lets the output finish (or run out of time); a break ends it.
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_) return Error(broken_code_, broken_reason_);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    BreakLocked(Code::kDeviceUnavailable, "connection lost while sending: " +
                                              (r.kind == IoResult::kEof ? "closed" : r.error));
    return Error(broken_code_, broken_reason_);
  }
}

void StreamEndpoint::WaitWritable(Io want) {
  Lock lock(mu_);
  if (broken_) return;
  // Read while waiting, if no one else does: a peer that is itself blocked sending to us
  // then still gets through, so the two sides never wait for each other.
  const bool read = !reader_ && incoming_bytes_ < options_.receive_buffer_bytes;
  if (read) {
    reader_ = true;
    reader_is_io_ = false;
  }
  lock.unlock();
  const Io got = read ? ReadPass() : Io::kFull;
  if (got != Io::kMore && got != Io::kFailed) {
    short events = want == Io::kWantRead ? POLLIN : POLLOUT;
    if (read && (got == Io::kDone || got == Io::kWantRead)) events |= POLLIN;
    if (got == Io::kWantWrite) events |= POLLOUT;
    lock.lock();
    if (read) reader_asleep_ = true;
    lock.unlock();
    pollfd fds[2] = {{stream_->fd(), events, 0}, {read ? reader_wake_.get() : -1, POLLIN, 0}};
    const int ready = ::poll(fds, 2, 1000);
    if (ready > 0 && (fds[1].revents & POLLIN)) {
      uint64_t count;
      (void)!::read(reader_wake_.get(), &count, sizeof(count));
    }
    if (read && ready > 0 && (fds[0].revents & POLLIN)) (void)ReadPass();
  }
  if (read) {
    lock.lock();
    ReleaseReadRoleLocked();
  }
}

StreamEndpoint::Io StreamEndpoint::ReadPass(bool* read_bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return Io::kFailed;
    if (incoming_bytes_ >= options_.receive_buffer_bytes) return Io::kFull;
  }
  FrameDecoder::Output out;
  for (int round = 0; round < kReadRounds; ++round) {
    const std::span<uint8_t> direct = decoder_.DirectTarget(kDirectReadMin);
    IoResult r;
    {
      std::lock_guard<std::mutex> io(read_mu_);
      r = direct.empty() ? stream_->Read(read_buffer_.data(), read_buffer_.size())
                         : stream_->Read(direct.data(), direct.size());
    }
    switch (r.kind) {
      case IoResult::kDone: {
        Touch(last_rx_);
        if (read_bytes != nullptr) *read_bytes = true;
        // A short read of a stream without its own input buffer emptied the socket: no need
        // to ask again only to hear "would block".
        const bool drained = !stream_->buffers_input() &&
                             r.bytes < (direct.empty() ? read_buffer_.size() : direct.size());
        const Status decoded = direct.empty() ? decoder_.Feed({read_buffer_.data(), r.bytes}, &out)
                                              : decoder_.Filled(r.bytes, &out);
        if (!decoded.ok()) {
          Break(Code::kInvalidValue, decoded.message());
          return Io::kFailed;
        }
        if (out.any()) {
          Deliver(out);
          out = {};
          std::lock_guard<std::mutex> lock(mu_);
          if (incoming_bytes_ >= options_.receive_buffer_bytes) return Io::kFull;
        }
        if (drained) return Io::kDone;
        break;
      }
      case IoResult::kWantRead:
        return Io::kDone;
      case IoResult::kWantWrite:
        return Io::kWantWrite;
      case IoResult::kEof: {
        std::lock_guard<std::mutex> lock(mu_);
        // A process that exits without closing its channel (the usual end of a guest
        // program) is a plain disconnect, as on the unix channel; only a goodbye says more.
        BreakLocked(Code::kDeviceUnavailable,
                    peer_said_goodbye_ ? "peer closed the channel" : "peer disconnected");
        return Io::kFailed;
      }
      case IoResult::kError:
        Break(Code::kDeviceUnavailable, "connection lost: " + r.error);
        return Io::kFailed;
    }
  }
  return Io::kMore;
}

void StreamEndpoint::Deliver(FrameDecoder::Output& out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& message : out.messages) {
    incoming_bytes_ += message.size();
    incoming_.push_back(std::move(message));
  }
  if (out.fence > fence_.load(std::memory_order_relaxed)) {
    fence_.store(out.fence, std::memory_order_release);
  }
  if (out.goodbye) peer_said_goodbye_ = true;
  // Whoever read this sends the fence, if it is due now (see EnsureWriterLocked's callers).
  // A guest that asks for more values than it can be waiting for (one per thread, in
  // reason) is not served more: the largest are dropped, and those waits are answered by
  // the next fence that other output carries.
  for (uint64_t wanted : out.fences_wanted) {
    if (wanted > fence_sent_) peer_wants_.insert(wanted);
  }
  while (peer_wants_.size() > kMaxFenceWants) peer_wants_.erase(std::prev(peer_wants_.end()));
  cv_.notify_all();
}

void StreamEndpoint::Run() {
  // A write to a socket whose peer is gone must fail with EPIPE here, not raise SIGPIPE in the
  // process (kernel TLS writes with write(2), which has no MSG_NOSIGNAL; see tcp_stream.h).
  // Blocked, a SIGPIPE this thread raises stays pending on this thread, which never unblocks it.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  const auto heartbeat = milliseconds(options_.heartbeat_ms);
  const auto dead_after = milliseconds(options_.dead_after_ms);
  Clock::time_point close_deadline{};
  Clock::time_point deaf_until{};
  bool goodbye_queued = false;
  bool woke_on_input = false;
  bool waited_for_role = false;
  Lock lock(mu_);
  while (!broken_) {
    Clock::time_point now = Clock::now();
    // Silence while we hold back reading is our doing, not the peer's.
    const bool full = incoming_bytes_ >= options_.receive_buffer_bytes;
    if (full) Touch(last_rx_);
    if (closed_) {
      if (close_deadline == Clock::time_point{}) {
        close_deadline = now + milliseconds(options_.close_flush_ms);
      }
      if (now >= close_deadline) {
        BreakLocked(Code::kDeviceUnavailable, "channel closed before the peer took all output");
        break;
      }
      if (!writer_ && !goodbye_queued) {
        pending_.AppendFrame(kGoodbye, {});
        goodbye_queued = true;
        HandWriteRoleToIoLocked();
      } else if (!writer_ && goodbye_queued && pending_.empty()) {
        lock.unlock();
        {
          std::lock_guard<std::mutex> io(write_mutex());
          stream_->ShutdownWrite();
        }
        lock.lock();
        BreakLocked(Code::kDeviceUnavailable, "channel closed");
        break;
      }
    } else if (!writer_ && (now - When(last_tx_) >= heartbeat || FenceUrgentLocked())) {
      if (now - When(last_tx_) >= heartbeat) pending_.AppendFrame(kHeartbeat, {});
      HandWriteRoleToIoLocked();
    }
    // Input woke us while a caller was reading: wait for it to be done, once, and then read
    // what it left. After a synchronous call's answer that is nothing (and we stop listening
    // for a while, below); in a stream of bulk messages it is the next ones, which we read
    // while the caller works on the one it took, as a second pair of hands.
    if (woke_on_input && reader_ && !reader_is_io_ && !full && !waited_for_role) {
      waited_for_role = true;
      io_wants_role_ = true;
      cv_.wait_for(lock, milliseconds(2),
                   [&] { return !reader_ || broken_ || closed_ || IoHandoffPendingLocked(); });
      io_wants_role_ = false;
      continue;
    }
    waited_for_role = false;
    const bool write = writer_ && writer_is_io_;
    if (write) io_started_ = true;
    // Whatever waits is read whenever no one else reads.
    const bool read = !reader_ && !full;
    if (read) {
      reader_ = true;
      reader_is_io_ = true;
    }
    lock.unlock();
    const Io wrote = write ? Flush(/*release=*/true) : Io::kDone;
    bool read_bytes = false;
    const Io got = read ? ReadPass(&read_bytes) : Io::kDone;
    lock.lock();
    if (broken_) break;
    now = Clock::now();
    if (incoming_bytes_ < options_.receive_buffer_bytes && now - When(last_rx_) >= dead_after) {
      BreakLocked(Code::kDeviceUnavailable, "nothing heard from the peer for " +
                                                std::to_string(options_.dead_after_ms / 1000) +
                                                " s: it or the network is gone");
      break;
    }
    // Input that woke us but that someone else had taken (or nothing at all) means a caller
    // is reading its own answers: stop listening for a while, rather than wake with each.
    if (woke_on_input && !(read && read_bytes)) deaf_until = now + heartbeat / 4;
    woke_on_input = false;
    const bool write_blocked = write && (wrote == Io::kWantRead || wrote == Io::kWantWrite);
    if (read && got == Io::kMore) {
      ReleaseReadRoleLocked();
      continue;
    }
    // Handed more meanwhile, or output due (a fence the guest asked for, just read), or
    // closing and the goodbye (or the output before it) is out.
    if (!write_blocked &&
        ((writer_ && writer_is_io_) || (!writer_ && OutputDueLocked()) || (closed_ && write))) {
      if (read) ReleaseReadRoleLocked();
      continue;
    }
    short events = 0;
    if (write_blocked) events |= wrote == Io::kWantRead ? POLLIN : POLLOUT;
    // A TLS read that needs the socket first keeps the read role across the wait.
    const bool hold = read && (got == Io::kWantRead || got == Io::kWantWrite);
    if (hold) {
      events |= got == Io::kWantWrite ? POLLOUT : POLLIN;
      reader_asleep_ = true;
    } else if (read) {
      ReleaseReadRoleLocked();
    }
    // Listen for input when no one else reads (a caller that waits reads its own answers),
    // always while our own output is held up: a peer blocked on us in turn still gets through.
    const bool listen = read && got == Io::kDone && (now >= deaf_until || write_blocked);
    if (listen) events |= POLLIN;
    // Wake for the next heartbeat (unless a caller holds the write role: then it is its
    // output that counts), the peer's deadline, the close deadline; and at least once a
    // heartbeat period, to read what waits.
    Clock::time_point wake_at = now + heartbeat;
    if (!writer_ || writer_is_io_) wake_at = std::min(wake_at, When(last_tx_) + heartbeat);
    wake_at = std::min(wake_at, When(last_rx_) + dead_after);
    if (closed_) wake_at = std::min(wake_at, close_deadline);
    const auto wait = std::chrono::duration_cast<milliseconds>(wake_at - now).count() + 1;
    io_asleep_ = true;
    lock.unlock();
    // fd -1 when we want nothing from the socket, or a hung-up socket would wake us at once.
    pollfd fds[2] = {{events ? stream_->fd() : -1, events, 0}, {io_wake_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::clamp<int64_t>(wait, 0, 60000)));
    if (ready > 0 && (fds[1].revents & POLLIN)) {
      uint64_t count;
      (void)!::read(io_wake_.get(), &count, sizeof(count));
    }
    woke_on_input = ready > 0 && (events & POLLIN) && (fds[0].revents & (POLLIN | POLLHUP));
    lock.lock();
    io_asleep_ = false;
    if (hold) ReleaseReadRoleLocked();
  }
  // Whatever ended the loop, every waiter learns it now.
  BreakLocked(Code::kDeviceUnavailable, "channel closed");
}

}  // namespace pvgpu::transport::internal
