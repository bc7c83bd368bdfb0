#include "guest/cuda/handle_store.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace pvgpu::guest {
namespace {

struct Record {
  int owner = 0;
};

TEST(HandleStoreTest, FindsOnlyWhatWasAdded) {
  HandleStore<Record> store;
  Record* handle = store.Add(std::make_shared<Record>());
  EXPECT_EQ(store.Find(handle).get(), handle);
  EXPECT_TRUE(store.Contains(handle));
  Record forged;  // never added: not found, and never dereferenced
  EXPECT_EQ(store.Find(&forged), nullptr);
  EXPECT_EQ(store.Find(nullptr), nullptr);
}

TEST(HandleStoreTest, TakeRemovesOnceAndTheRefOutlivesTheStore) {
  HandleStore<Record> store;
  Record* handle = store.Add(std::make_shared<Record>());
  Ref<Record> held = store.Find(handle);  // a call in flight
  Ref<Record> taken = store.Take(handle);
  ASSERT_EQ(taken.get(), handle);
  EXPECT_EQ(store.Take(handle), nullptr);  // the second destroy finds nothing
  EXPECT_FALSE(store.Contains(handle));
  taken.reset();
  held->owner = 7;  // still alive: the call's Ref keeps it
  EXPECT_EQ(held.use_count(), 1);
}

TEST(HandleStoreTest, TakeIfRemovesTheMatchingRecords) {
  HandleStore<Record> store;
  std::vector<Record*> handles;
  for (int i = 0; i < 6; ++i) {
    auto record = std::make_shared<Record>();
    record->owner = i % 2;
    handles.push_back(store.Add(std::move(record)));
  }
  const auto taken = store.TakeIf([](const Record& r) { return r.owner == 1; });
  EXPECT_EQ(taken.size(), 3u);
  for (Record* handle : handles) {
    EXPECT_EQ(store.Contains(handle), handle->owner == 0);
  }
}

TEST(HandleStoreTest, OneOfTwoConcurrentDestroysWins) {
  for (int round = 0; round < 200; ++round) {
    HandleStore<Record> store;
    Record* handle = store.Add(std::make_shared<Record>());
    Ref<Record> first, second;
    std::thread a([&] { first = store.Take(handle); });
    std::thread b([&] { second = store.Take(handle); });
    a.join();
    b.join();
    EXPECT_NE(first == nullptr, second == nullptr);
  }
}

}  // namespace
}  // namespace pvgpu::guest
