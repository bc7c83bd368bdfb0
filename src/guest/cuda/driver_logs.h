// The CUDA driver's error log (cuLogs*, CUDA 12.9; api_logs.cc): recent warning and error
// messages in a bounded buffer, read from auto-advancing iterators, and callbacks that get each
// new message. The process's log (Process()) holds libcuda's own warnings and errors, captured
// from its log whatever PVGPU_LOG prints.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"

struct CUlogsCallbackEntry_st {
  CUlogsCallback fn = nullptr;
  void* user = nullptr;
};

namespace pvgpu::guest {

class DriverLogs {
 public:
  // The driver's documented bound: "the maximum size of the buffer is 25600 bytes".
  static constexpr size_t kBytes = 25600;
  // The line that stands for messages dropped or left out.
  static constexpr char kDroppedNote[] = "[pvgpu: earlier log messages were dropped]";

  // Keeps the newest messages whose texts and newlines fit in `capacity` bytes.
  explicit DriverLogs(size_t capacity) : capacity_(capacity) {}
  // libcuda's, capturing its log (created when the library is loaded).
  static DriverLogs& Process();

  // Keeps `message` and hands it to every callback, outside the lock (a callback may use the
  // log itself).
  void Append(CUlogLevel level, const std::string& message);
  CUlogsCallbackHandle Register(CUlogsCallback fn, void* user);
  bool Unregister(CUlogsCallbackHandle handle);
  // Where the next message will be.
  CUlogIterator Current();

  // What cuLogsDumpToFile writes: the messages from *iterator on (every kept one for nullptr),
  // a line each, after kDroppedNote when some of them were dropped; advances *iterator.
  std::string DumpForFile(CUlogIterator* iterator);
  // What cuLogsDumpToMemory writes into `room` bytes (NUL included): the newest of those
  // messages that fit, the newest always, kDroppedNote first when any is dropped or left out
  // and it fits. False when not even the newest fits (*iterator advances either way).
  bool DumpForMemory(CUlogIterator* iterator, size_t room, std::string* text);

 private:
  struct Entry {
    CUlogIterator seq;
    std::string text;
  };
  // The messages from *iterator on and whether some were dropped; advances *iterator. (The
  // iterator is a message count: it would wrap after 2^32 messages.)
  std::vector<std::string> Since(CUlogIterator* iterator, bool* lost);

  const size_t capacity_;
  Mutex mutex_;
  std::deque<Entry> entries_ GUARDED_BY(mutex_);
  size_t bytes_ GUARDED_BY(mutex_) = 0;
  CUlogIterator next_ GUARDED_BY(mutex_) = 0;
  std::vector<std::shared_ptr<CUlogsCallbackEntry_st>> callbacks_ GUARDED_BY(mutex_);
};

}  // namespace pvgpu::guest
