#include "guest/cuda/context_storage.h"

#include <algorithm>

namespace pvgpu::guest {

void ContextStorage::Put(CUcontext ctx, void* key, void* value, Destructor destructor) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry>& entries = entries_[ctx];
  for (Entry& entry : entries) {
    if (entry.key == key) {
      entry.value = value;
      entry.destructor = destructor;
      return;
    }
  }
  entries.push_back({key, value, destructor});
}

bool ContextStorage::Get(CUcontext ctx, void* key, void** value) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(ctx);
  if (it == entries_.end()) return false;
  for (const Entry& entry : it->second) {
    if (entry.key == key) {
      *value = entry.value;
      return true;
    }
  }
  return false;
}

bool ContextStorage::Delete(CUcontext ctx, void* key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(ctx);
  if (it == entries_.end()) return false;
  std::vector<Entry>& entries = it->second;
  auto found = std::find_if(entries.begin(), entries.end(),
                            [key](const Entry& entry) { return entry.key == key; });
  if (found == entries.end()) return false;
  entries.erase(found);
  if (entries.empty()) entries_.erase(it);
  return true;
}

void ContextStorage::RunDestructors(CUcontext ctx) {
  std::vector<Entry> entries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(ctx);
    if (it == entries_.end()) return;
    entries.swap(it->second);
    entries_.erase(it);
  }
  for (const Entry& entry : entries) {
    if (entry.destructor != nullptr) entry.destructor(ctx, entry.key, entry.value);
  }
}

ContextStorage& ProcessContextStorage() {
  static ContextStorage* storage = new ContextStorage();  // never destroyed: atexit-safe
  return *storage;
}

}  // namespace pvgpu::guest

namespace pvgpu::guest {

void RunContextStorageDestructors(CUctx_st* ctx) { ProcessContextStorage().RunDestructors(ctx); }

}  // namespace pvgpu::guest
