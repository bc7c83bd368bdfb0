// The context-local storage store on its own: per-context values, destructors, and use from
// many threads. The table slots that resolve "the current context" around it are tested with a
// real daemon in tests/runtime/export_tables_drv.cc.
#include "guest/cuda/context_storage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pvgpu::guest {
namespace {

// Distinct addresses standing for contexts and keys; the store never dereferences them.
CUcontext Ctx(int i) {
  static char contexts[8];
  return reinterpret_cast<CUcontext>(&contexts[i]);
}
void* Key(int i) {
  static char keys[8];
  return &keys[i];
}
void* Value(intptr_t v) { return reinterpret_cast<void*>(v); }

struct Destroyed {
  CUcontext ctx;
  void* key;
  void* value;
};
std::vector<Destroyed>* g_destroyed = nullptr;
void Record(CUcontext ctx, void* key, void* value) { g_destroyed->push_back({ctx, key, value}); }

class ContextStorageTest : public ::testing::Test {
 protected:
  void SetUp() override { g_destroyed = &destroyed_; }
  void TearDown() override { g_destroyed = nullptr; }
  ContextStorage storage_;
  std::vector<Destroyed> destroyed_;
};

TEST_F(ContextStorageTest, ValuesArePerContextAndPerKey) {
  void* value = nullptr;
  EXPECT_FALSE(storage_.Get(Ctx(0), Key(0), &value));
  storage_.Put(Ctx(0), Key(0), Value(10), nullptr);
  storage_.Put(Ctx(0), Key(1), Value(11), nullptr);
  storage_.Put(Ctx(1), Key(0), Value(20), nullptr);
  ASSERT_TRUE(storage_.Get(Ctx(0), Key(0), &value));
  EXPECT_EQ(value, Value(10));
  ASSERT_TRUE(storage_.Get(Ctx(0), Key(1), &value));
  EXPECT_EQ(value, Value(11));
  ASSERT_TRUE(storage_.Get(Ctx(1), Key(0), &value));
  EXPECT_EQ(value, Value(20));
  EXPECT_FALSE(storage_.Get(Ctx(1), Key(1), &value));
  EXPECT_FALSE(storage_.Get(Ctx(2), Key(0), &value));
}

TEST_F(ContextStorageTest, PutReplacesWithoutRunningTheOldDestructor) {
  storage_.Put(Ctx(0), Key(0), Value(1), &Record);
  storage_.Put(Ctx(0), Key(0), Value(2), &Record);
  void* value = nullptr;
  ASSERT_TRUE(storage_.Get(Ctx(0), Key(0), &value));
  EXPECT_EQ(value, Value(2));
  EXPECT_TRUE(destroyed_.empty());
  storage_.RunDestructors(Ctx(0));
  ASSERT_EQ(destroyed_.size(), 1u);  // the replaced value is the caller's, not ours
  EXPECT_EQ(destroyed_[0].value, Value(2));
}

TEST_F(ContextStorageTest, DeleteForgetsWithoutRunningTheDestructor) {
  storage_.Put(Ctx(0), Key(0), Value(1), &Record);
  EXPECT_TRUE(storage_.Delete(Ctx(0), Key(0)));
  EXPECT_FALSE(storage_.Delete(Ctx(0), Key(0)));
  void* value = nullptr;
  EXPECT_FALSE(storage_.Get(Ctx(0), Key(0), &value));
  storage_.RunDestructors(Ctx(0));
  EXPECT_TRUE(destroyed_.empty());
}

TEST_F(ContextStorageTest, DestructorsRunOnceForTheirContextOnly) {
  storage_.Put(Ctx(0), Key(0), Value(1), &Record);
  storage_.Put(Ctx(0), Key(1), Value(2), &Record);
  storage_.Put(Ctx(1), Key(0), Value(3), &Record);
  storage_.RunDestructors(Ctx(0));
  ASSERT_EQ(destroyed_.size(), 2u);
  EXPECT_EQ(destroyed_[0].ctx, Ctx(0));
  EXPECT_EQ(destroyed_[0].key, Key(0));
  EXPECT_EQ(destroyed_[0].value, Value(1));
  EXPECT_EQ(destroyed_[1].key, Key(1));
  EXPECT_EQ(destroyed_[1].value, Value(2));
  void* value = nullptr;
  EXPECT_FALSE(storage_.Get(Ctx(0), Key(0), &value));  // reset: the context starts empty
  ASSERT_TRUE(storage_.Get(Ctx(1), Key(0), &value));
  EXPECT_EQ(value, Value(3));
  storage_.RunDestructors(Ctx(0));  // nothing left to run
  EXPECT_EQ(destroyed_.size(), 2u);
}

// What the runtime does in its destructor: looks at, and rebuilds in, the store.
ContextStorage* g_reentrant = nullptr;
void Reenter(CUcontext ctx, void* key, void* value) {
  void* seen = nullptr;
  EXPECT_FALSE(g_reentrant->Get(ctx, key, &seen));  // already gone when its destructor runs
  g_reentrant->Put(ctx, Key(7), value, nullptr);
}

TEST_F(ContextStorageTest, DestructorsMayUseTheStore) {
  g_reentrant = &storage_;
  storage_.Put(Ctx(0), Key(0), Value(5), &Reenter);
  storage_.RunDestructors(Ctx(0));
  void* value = nullptr;
  ASSERT_TRUE(storage_.Get(Ctx(0), Key(7), &value));
  EXPECT_EQ(value, Value(5));
  g_reentrant = nullptr;
}

// Threads putting, reading and deleting their own keys while another thread resets a context
// they do not use: every thread reads back exactly its own values.
TEST_F(ContextStorageTest, IsSafeFromManyThreads) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::atomic<int> mismatches{0};
  std::atomic<bool> stop{false};
  std::thread resetter([&] {
    while (!stop.load()) {
      storage_.Put(Ctx(7), Key(0), Value(1), nullptr);
      storage_.RunDestructors(Ctx(7));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        storage_.Put(Ctx(t % 2), Key(t), Value(i + 1), nullptr);
        void* value = nullptr;
        if (!storage_.Get(Ctx(t % 2), Key(t), &value) || value != Value(i + 1)) ++mismatches;
        if (i % 3 == 0 && !storage_.Delete(Ctx(t % 2), Key(t))) ++mismatches;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  stop = true;
  resetter.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace pvgpu::guest
