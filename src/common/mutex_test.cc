#include "common/mutex.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <thread>
#include <vector>

namespace pvgpu {
namespace {

class Counter {
 public:
  void Add() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    ++value_;
  }
  int value() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return value_;
  }

 private:
  Mutex mutex_;
  int value_ GUARDED_BY(mutex_) = 0;
};

TEST(MutexTest, MutexLockExcludesOtherThreads) {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) counter.Add();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), 80000);
}

TEST(MutexTest, TryLockFailsWhileHeld) {
  Mutex mutex;
  {
    MutexLock lock(&mutex);
    std::thread([&] {
      if (mutex.TryLock()) {
        mutex.Unlock();
        ADD_FAILURE() << "locked a held mutex";
      }
    }).join();
  }
  if (mutex.TryLock()) {
    mutex.Unlock();
  } else {
    ADD_FAILURE() << "could not lock a free mutex";
  }
}

class Flag {
 public:
  void Set() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    set_ = true;
    changed_.notify_all();
  }
  void Wait() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    while (!set_) changed_.wait(mutex_);
  }

 private:
  Mutex mutex_;
  std::condition_variable_any changed_;
  bool set_ GUARDED_BY(mutex_) = false;
};

TEST(MutexTest, ConditionVariableWaitsOnIt) {
  Flag flag;
  std::thread setter([&] { flag.Set(); });
  flag.Wait();  // returns only once Set ran; a hang here is the failure
  setter.join();
}

}  // namespace
}  // namespace pvgpu
