// The remote channel's Endpoint: the local channel's command stream, carried as length-prefixed
// frames over a byte stream (plain TCP on loopback, or TLS).
//
// Frames (little-endian): u32 length, u32 type, then `length` bytes.
//   kMessage    one Endpoint message (length <= max_message_size)
//   kFence      u64: the host's completion fence; the reader keeps the largest value seen
//   kHeartbeat  empty: sent after heartbeat_ms without other output, so silence means trouble
//   kGoodbye    empty: orderly close (the peer's logs then say "closed", not "lost")
//
// One I/O thread per endpoint owns the stream (TLS objects are single-threaded). Send appends
// frames to a pending buffer and returns; the thread takes everything pending in one batch and
// writes it non-stop, so pipelined commands and bulk chunks coalesce into large writes. The
// host's PublishFence only marks the fence dirty: at most one fence frame goes out per batch,
// after the replies of that batch. Incoming frames are parsed as they arrive, so the fence
// advances, and liveness is tracked, even while no one calls Receive.
//
// Failure: after dead_after_ms without a byte from the peer (its heartbeats stop when the
// process, host or network is gone) the endpoint breaks and every waiter, including a Send
// blocked on a full buffer, gets kDeviceUnavailable. Silence does not count while this side
// itself holds back reading because its own incoming queue is full (backpressure).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "transport/channel.h"
#include "transport/tcp_stream.h"

namespace pvgpu::transport::internal {

struct StreamEndpointOptions {
  size_t max_message_size = 4u << 20;
  int heartbeat_ms = 1000;
  int dead_after_ms = 5000;
  // Send blocks while this much output is waiting for the socket.
  size_t send_buffer_bytes = 16u << 20;
  // Reading stops (and TCP pushes back on the peer) while this much input waits for Receive.
  size_t receive_buffer_bytes = 32u << 20;
  // How long Close keeps flushing output the peer does not take before dropping it.
  int close_flush_ms = 2000;
  std::string description;  // for Describe() and logs
};

std::unique_ptr<Endpoint> MakeStreamEndpoint(std::unique_ptr<ByteStream> stream,
                                             const StreamEndpointOptions& options);

}  // namespace pvgpu::transport::internal
