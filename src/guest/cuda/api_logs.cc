// Driver API: error log management (cuLogs*, CUDA 12.9). The driver keeps its recent error and
// warning messages in a bounded buffer that a program can read from an iterator, and hands each
// new one to the callbacks it registered. pvgpu's are libcuda's own warnings and errors (a
// module refused and why, a call not supported, a lost host), captured from its log whatever
// PVGPU_LOG prints: PyTorch, for one, registers a callback at start-up.
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "guest/cuda/cuda_api_autogen.h"

struct CUlogsCallbackEntry_st {
  CUlogsCallback fn = nullptr;
  void* user = nullptr;
};

namespace pvgpu::guest {
namespace {

// The driver's documented bound: "the maximum size of the buffer is 25600 bytes".
constexpr size_t kLogBytes = 25600;

struct Entry {
  CUlogIterator seq;
  CUlogLevel level;
  std::string text;
};

class DriverLogs {
 public:
  static DriverLogs& Get() {
    static DriverLogs* logs = new DriverLogs();  // outlives every static destructor's warning
    return *logs;
  }

  void Append(log::Level level, const std::string& message) {
    const CUlogLevel cu = level == log::Level::kError ? CU_LOG_LEVEL_ERROR : CU_LOG_LEVEL_WARNING;
    std::vector<std::shared_ptr<CUlogsCallbackEntry_st>> callbacks;
    {
      MutexLock lock(&mutex_);
      entries_.push_back(Entry{next_++, cu, message.substr(0, kLogBytes - 1)});
      bytes_ += entries_.back().text.size() + 1;
      while (bytes_ > kLogBytes) {
        bytes_ -= entries_.front().text.size() + 1;
        entries_.pop_front();
      }
      callbacks = callbacks_;
    }
    // Outside the lock: a callback may call cuLogs* itself.
    for (const auto& c : callbacks) {
      std::vector<char> copy(message.begin(), message.end());
      copy.push_back('\0');
      c->fn(c->user, cu, copy.data(), message.size());
    }
  }

  CUlogsCallbackHandle Register(CUlogsCallback fn, void* user) {
    auto entry = std::make_shared<CUlogsCallbackEntry_st>(CUlogsCallbackEntry_st{fn, user});
    MutexLock lock(&mutex_);
    callbacks_.push_back(entry);
    return entry.get();
  }

  bool Unregister(CUlogsCallbackHandle handle) {
    MutexLock lock(&mutex_);
    for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
      if (it->get() == handle) {
        callbacks_.erase(it);
        return true;
      }
    }
    return false;
  }

  CUlogIterator Current() {
    MutexLock lock(&mutex_);
    return next_;
  }

  // The messages from *iterator on (every kept one for nullptr), oldest first, and whether
  // some of those were overwritten (for nullptr: whether any ever was); advances *iterator
  // past the newest. (The iterator is a message count: it would wrap after 2^32 messages.)
  std::vector<std::string> Since(CUlogIterator* iterator, bool* lost) {
    MutexLock lock(&mutex_);
    const CUlogIterator oldest = entries_.empty() ? next_ : entries_.front().seq;
    const CUlogIterator from = iterator != nullptr ? *iterator : 0;
    *lost = from < oldest;
    std::vector<std::string> texts;
    for (const Entry& e : entries_) {
      if (e.seq >= from) texts.push_back(e.text);
    }
    if (iterator != nullptr) *iterator = next_;
    return texts;
  }

 private:
  DriverLogs() {
    log::SetCapture(log::Level::kWarn,
                    [](log::Level level, const std::string& m) { Get().Append(level, m); });
  }

  Mutex mutex_;
  std::deque<Entry> entries_ GUARDED_BY(mutex_);
  size_t bytes_ GUARDED_BY(mutex_) = 0;
  CUlogIterator next_ GUARDED_BY(mutex_) = 0;
  std::vector<std::shared_ptr<CUlogsCallbackEntry_st>> callbacks_ GUARDED_BY(mutex_);
};

// The capture starts when the library is loaded, so that the first warnings are kept too.
__attribute__((constructor)) void StartDriverLogs() { DriverLogs::Get(); }

constexpr char kTruncated[] = "[pvgpu: earlier log messages were dropped]";

}  // namespace

namespace api {

Code LogsRegisterCallback(CUlogsCallback callbackFunc, void* userData,
                          CUlogsCallbackHandle* callback_out) {
  if (callbackFunc == nullptr) return Code::kInvalidValue;
  CUlogsCallbackHandle handle = DriverLogs::Get().Register(callbackFunc, userData);
  if (callback_out != nullptr) *callback_out = handle;
  return Code::kOk;
}

Code LogsUnregisterCallback(CUlogsCallbackHandle callback) {
  return DriverLogs::Get().Unregister(callback) ? Code::kOk : Code::kInvalidValue;
}

Code LogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  *iterator_out = DriverLogs::Get().Current();
  return Code::kOk;
}

Code LogsDumpToFile(CUlogIterator* iterator, const char* pathToFile, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  FILE* out = std::fopen(pathToFile, "w");
  if (out == nullptr) return Code::kInvalidValue;
  bool lost = false;
  std::string text;
  for (const std::string& m : DriverLogs::Get().Since(iterator, &lost)) text += m + "\n";
  if (lost) text = std::string(kTruncated) + "\n" + text;
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  return std::fclose(out) == 0 && ok ? Code::kOk : Code::kInvalidValue;
}

Code LogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  const size_t room = *size;  // bytes, the terminating NUL included
  bool lost = false;
  const std::vector<std::string> messages = DriverLogs::Get().Since(iterator, &lost);
  *size = 0;
  if (messages.empty()) {
    if (room > 0) buffer[0] = '\0';
    return Code::kOk;
  }
  // The newest messages that fit, each with its newline, and the NUL.
  size_t first = messages.size(), used = 1;
  while (first > 0 && used + messages[first - 1].size() + 1 <= room) {
    used += messages[first - 1].size() + 1;
    --first;
  }
  if (first == messages.size()) return Code::kInvalidValue;  // not even the newest fits
  // A note first when any is left out, room made for it unless only the newest would remain.
  const bool note = first > 0 || lost;
  const size_t note_bytes = sizeof(kTruncated);  // its text and a newline
  while (note && first + 1 < messages.size() && used + note_bytes > room) {
    used -= messages[first].size() + 1;
    ++first;
  }
  std::string text;
  if (note && used + note_bytes <= room) text = std::string(kTruncated) + "\n";
  for (size_t i = first; i < messages.size(); ++i) text += messages[i] + "\n";
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  *size = text.size();
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
