// Sleeping on an eventfd doorbell without losing wake-ups between threads of one side.
//
// Several threads of one side may wait at once (Receive, a full-ring Send, WaitFence), all on the
// same eventfd. If each polled and drained it, one could swallow the wake-up meant for another.
// So one thread at a time (the leader) polls and drains; the others wait on a condition
// variable for the leader to finish, and then everyone re-checks its own condition. A
// generation counter, read *before* the condition check, closes the window in which a wake-up
// lands between the check and going to sleep.
//
// The leader also polls the Unix socket for hang-up (events = POLLRDHUP only, so queued
// SendFd records do not wake it): that is how a dead peer is noticed without any syscall on
// the fast path.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "common/status.h"
#include "transport/fd_util.h"

namespace pvgpu::transport::internal {

class Doorbell {
 public:
  // Neither descriptor is owned.
  Doorbell(int event_fd, int socket) : event_fd_(event_fd), socket_(socket) {}

  uint64_t generation();
  // Sleeps until a wake-up after `seen_generation` (kOk, possibly spurious), the deadline
  // (kNotReady) or a hang-up of the socket (kDeviceUnavailable, sticky).
  Status Sleep(uint64_t seen_generation, const Deadline& deadline);

 private:
  const int event_fd_;
  const int socket_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  bool leader_ = false;
  bool hung_up_ = false;
};

// Rings a peer's doorbell. Never blocks: the eventfds are O_NONBLOCK, and a full counter means
// the doorbell is already ringing.
void RingDoorbell(int event_fd);

}  // namespace pvgpu::transport::internal
