// Mutex: std::mutex with Clang's thread-safety annotations (common/thread_annotations.h), so
// that GUARDED_BY(mu_) data and REQUIRES(mu_) functions are checked at compile time, and
// MutexLock, its scoped holder.
//
// Mutex is also BasicLockable (lock()/unlock()), so std::condition_variable_any can wait on it.
// Wait in an explicit loop (`while (!ready_) changed_.wait(mu_);`) rather than with a predicate
// lambda: the analysis checks a lambda's body on its own, without the caller's lock.
#pragma once

#include <mutex>

#include "common/thread_annotations.h"

namespace pvgpu {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mutex_.lock(); }
  void Unlock() RELEASE() { mutex_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }

  // The standard names, for std::condition_variable_any and std::scoped_lock.
  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }

 private:
  std::mutex mutex_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_->Lock(); }
  ~MutexLock() RELEASE() { mutex_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mutex_;
};

}  // namespace pvgpu
