#include "host/handle_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace pvgpu::host {
namespace {

TEST(HandleStoreTest, FindsWhatWasAddedUntilItIsErased) {
  ObjectBudget budget(10);
  HandleStore<std::string> store(budget);
  EXPECT_EQ(store.Find(7), nullptr);
  std::string* added = store.Add(7, "seven");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(store.Find(7), added);
  EXPECT_EQ(*store.Find(7), "seven");
  EXPECT_TRUE(store.Erase(7));
  EXPECT_EQ(store.Find(7), nullptr);
  EXPECT_FALSE(store.Erase(7));
  EXPECT_EQ(budget.used(), 0u);
}

TEST(HandleStoreTest, ANewHandleMustBeNonzeroAndFree) {
  ObjectBudget budget(10);
  HandleStore<int> store(budget);
  EXPECT_FALSE(store.Fresh(0));
  EXPECT_TRUE(store.Fresh(5));
  store.Add(5, 1);
  EXPECT_FALSE(store.Fresh(5));
  store.Erase(5);
  EXPECT_TRUE(store.Fresh(5));  // the guest never reuses ids; the store need not remember them
}

TEST(HandleStoreTest, ObjectsStayInPlaceAsTheStoreGrows) {
  ObjectBudget budget(100000);
  HandleStore<int> store(budget);
  int* first = store.Add(1, 42);
  for (uint64_t id = 2; id < 20000; ++id) store.Add(id, static_cast<int>(id));
  EXPECT_EQ(store.Find(1), first);
  EXPECT_EQ(*first, 42);
}

TEST(HandleStoreTest, StoresOfOneKindShareTheirBudget) {
  ObjectBudget budget(3);
  HandleStore<int> a(budget), b(budget);
  EXPECT_NE(a.Add(1, 0), nullptr);
  EXPECT_NE(b.Add(1, 0), nullptr);  // the same id in another scope is another object
  EXPECT_NE(b.Add(2, 0), nullptr);
  EXPECT_TRUE(budget.full());
  EXPECT_EQ(a.Add(2, 0), nullptr);
  EXPECT_EQ(a.Find(2), nullptr) << "nothing is added past the budget";
  EXPECT_TRUE(a.Fresh(2));
  b.Clear();
  EXPECT_EQ(budget.used(), 1u);
  EXPECT_NE(a.Add(2, 0), nullptr);
}

TEST(HandleStoreTest, ADestroyedStoreGivesBackItsObjectsAndRefusals) {
  ObjectBudget budget(2);
  {
    HandleStore<std::unique_ptr<int>> store(budget);
    store.Add(1, std::make_unique<int>(1));
    store.Add(2, std::make_unique<int>(2));
    EXPECT_TRUE(store.Refuse(3));
    EXPECT_EQ(budget.used(), 2u);
  }
  EXPECT_EQ(budget.used(), 0u);
  HandleStore<int> other(budget);
  EXPECT_TRUE(other.Refuse(1));
  EXPECT_TRUE(other.Refuse(2)) << "the refusals were given back too";
}

TEST(HandleStoreTest, RefusedCreationsAreRememberedUpToTheLimit) {
  ObjectBudget budget(2);
  HandleStore<int> store(budget);
  EXPECT_TRUE(store.Refuse(10));
  EXPECT_TRUE(store.Refused(10));
  EXPECT_FALSE(store.Fresh(10)) << "a refused id is not free for a new object";
  EXPECT_EQ(store.Find(10), nullptr);
  EXPECT_TRUE(store.Refuse(11));
  EXPECT_FALSE(store.Refuse(12)) << "as many refusals as the limit";
  EXPECT_FALSE(store.Refused(12));
  EXPECT_TRUE(store.Forget(10));
  EXPECT_FALSE(store.Refused(10));
  EXPECT_FALSE(store.Forget(10));
  EXPECT_TRUE(store.Refuse(12));
}

}  // namespace
}  // namespace pvgpu::host
