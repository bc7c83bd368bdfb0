#include "guest/cuda/driver_logs.h"

#include "common/log.h"

namespace pvgpu::guest {
namespace {

CUlogLevel LevelOf(log::Level level) {
  return level == log::Level::kError ? CU_LOG_LEVEL_ERROR : CU_LOG_LEVEL_WARNING;
}

}  // namespace

DriverLogs& DriverLogs::Process() {
  // Leaked: it outlives every static destructor that may still log.
  static DriverLogs* logs = [] {
    auto* l = new DriverLogs(kBytes);
    log::SetCapture(log::Level::kWarn, [](log::Level level, const std::string& message) {
      Process().Append(LevelOf(level), message);
    });
    return l;
  }();
  return *logs;
}

void DriverLogs::Append(CUlogLevel level, const std::string& message) {
  std::vector<std::shared_ptr<CUlogsCallbackEntry_st>> callbacks;
  {
    MutexLock lock(&mutex_);
    entries_.push_back(Entry{next_++, message.substr(0, capacity_ > 0 ? capacity_ - 1 : 0)});
    bytes_ += entries_.back().text.size() + 1;
    while (bytes_ > capacity_ && !entries_.empty()) {
      bytes_ -= entries_.front().text.size() + 1;
      entries_.pop_front();
    }
    callbacks = callbacks_;
  }
  for (const auto& c : callbacks) {
    std::vector<char> copy(message.begin(), message.end());  // the callback gets a char*
    copy.push_back('\0');
    c->fn(c->user, level, copy.data(), message.size());
  }
}

CUlogsCallbackHandle DriverLogs::Register(CUlogsCallback fn, void* user) {
  auto entry = std::make_shared<CUlogsCallbackEntry_st>(CUlogsCallbackEntry_st{fn, user});
  MutexLock lock(&mutex_);
  callbacks_.push_back(entry);
  return entry.get();
}

bool DriverLogs::Unregister(CUlogsCallbackHandle handle) {
  MutexLock lock(&mutex_);
  for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
    if (it->get() == handle) {
      callbacks_.erase(it);
      return true;
    }
  }
  return false;
}

CUlogIterator DriverLogs::Current() {
  MutexLock lock(&mutex_);
  return next_;
}

std::vector<std::string> DriverLogs::Since(CUlogIterator* iterator, bool* lost) {
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

std::string DriverLogs::DumpForFile(CUlogIterator* iterator) {
  bool lost = false;
  std::string text;
  for (const std::string& m : Since(iterator, &lost)) text += m + "\n";
  if (lost) text = std::string(kDroppedNote) + "\n" + text;
  return text;
}

bool DriverLogs::DumpForMemory(CUlogIterator* iterator, size_t room, std::string* text) {
  bool lost = false;
  const std::vector<std::string> messages = Since(iterator, &lost);
  text->clear();
  if (messages.empty()) return true;
  // The newest messages that fit, each with its newline, and the NUL.
  size_t first = messages.size(), used = 1;
  while (first > 0 && used + messages[first - 1].size() + 1 <= room) {
    used += messages[first - 1].size() + 1;
    --first;
  }
  if (first == messages.size()) return false;
  // The note first when any is dropped or left out, older messages making room for it if
  // that is enough (the newest stays); else the messages alone.
  if (first > 0 || lost) {
    const size_t note_bytes = sizeof(kDroppedNote);  // its text and a newline
    size_t k = first, u = used;
    while (k + 1 < messages.size() && u + note_bytes > room) {
      u -= messages[k].size() + 1;
      ++k;
    }
    if (u + note_bytes <= room) {
      first = k;
      *text = std::string(kDroppedNote) + "\n";
    }
  }
  for (size_t i = first; i < messages.size(); ++i) *text += messages[i] + "\n";
  return true;
}

}  // namespace pvgpu::guest
