// HandleStore<T>: the live records of one kind behind the driver API's handles, under the
// store's own lock. A record is reached through a Ref (a shared_ptr): a call holds one while it
// uses the record, so another thread destroying the handle meanwhile (an application error)
// cannot free it under the call.
//
// Lookups never dereference the handle: a forged or stale one is simply not found.
#pragma once

#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace pvgpu::guest {

template <typename T>
using Ref = std::shared_ptr<T>;

template <typename T>
class HandleStore {
 public:
  // Registers `object`; its address is the handle the application is given.
  T* Add(Ref<T> object) EXCLUDES(mutex_) {
    T* handle = object.get();
    MutexLock lock(&mutex_);
    objects_[handle] = std::move(object);
    return handle;
  }

  // The live record behind `handle`, or null.
  Ref<T> Find(const void* handle) const EXCLUDES(mutex_) {
    if (handle == nullptr) return nullptr;
    MutexLock lock(&mutex_);
    auto it = objects_.find(handle);
    return it == objects_.end() ? nullptr : it->second;
  }
  bool Contains(const void* handle) const { return Find(handle) != nullptr; }

  // Removes the record behind `handle` and returns it (null when it is not live): of two
  // threads destroying one handle, exactly one gets the record.
  Ref<T> Take(const void* handle) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = objects_.find(handle);
    if (it == objects_.end()) return nullptr;
    Ref<T> object = std::move(it->second);
    objects_.erase(it);
    return object;
  }

  // Every record `pred(const T&)` holds for, left in the store. `pred` runs with the store
  // locked: it may read the record, nothing else.
  template <typename Pred>
  std::vector<Ref<T>> Select(Pred pred) const EXCLUDES(mutex_) {
    std::vector<Ref<T>> selected;
    MutexLock lock(&mutex_);
    for (const auto& [handle, object] : objects_) {
      if (pred(static_cast<const T&>(*object))) selected.push_back(object);
    }
    return selected;
  }

  // Removes and returns every record `pred(const T&)` holds for. `pred` runs with the store
  // locked: it may read the record, nothing else.
  template <typename Pred>
  std::vector<Ref<T>> TakeIf(Pred pred) EXCLUDES(mutex_) {
    std::vector<Ref<T>> taken;
    MutexLock lock(&mutex_);
    for (auto it = objects_.begin(); it != objects_.end();) {
      if (pred(static_cast<const T&>(*it->second))) {
        taken.push_back(std::move(it->second));
        it = objects_.erase(it);
      } else {
        ++it;
      }
    }
    return taken;
  }

 private:
  mutable Mutex mutex_;
  std::unordered_map<const void*, Ref<T>> objects_ GUARDED_BY(mutex_);
};

}  // namespace pvgpu::guest
