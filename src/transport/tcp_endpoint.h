// The remote channel's Endpoint: the local channel's command stream, carried as frames
// (stream_frames.h) over a byte stream (plain TCP on loopback, or TLS). stream_endpoint.h says
// which thread moves the bytes when; in short, callers that wait do their own I/O, bulk data
// is written from the caller's buffers and read straight into the message, and bursts of small
// messages are written by the endpoint's I/O thread in large writes.
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
  // Send of a small message blocks while this much queued output waits for the socket (a large
  // one always waits until the socket has taken it).
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
