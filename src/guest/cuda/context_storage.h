// Context-local storage: values that a client (NVIDIA's CUDA runtime) attaches to a context
// under a key of its choosing, with a destructor the driver runs when the context goes away.
// The runtime keeps its per-context state here and looks it up at the start of every runtime
// call, so lookups are cheap and the store is safe to use from any thread.
//
// This is the store only; export_tables.cc exposes it as the CONTEXT_LOCAL_STORAGE table and
// context_storage_slots.cc resolves "the current context" for it.
#pragma once

#include <cuda.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace pvgpu::guest {

class ContextStorage {
 public:
  // Called with the context, the key and the value when the context is reset or destroyed.
  using Destructor = void (*)(CUcontext ctx, void* key, void* value);

  // Stores `value` under (ctx, key). A key already present gets the new value and destructor;
  // the old value's destructor is not run (the caller replaced it and still owns it).
  void Put(CUcontext ctx, void* key, void* value, Destructor destructor);
  // False when (ctx, key) holds nothing.
  bool Get(CUcontext ctx, void* key, void** value) const;
  // Forgets (ctx, key) without running its destructor: the caller is tearing its state down
  // itself. False when nothing was stored.
  bool Delete(CUcontext ctx, void* key);
  // Forgets every value of `ctx` and runs their destructors, in the order they were stored.
  // The destructors run without the store's lock held, so they may use the store themselves.
  void RunDestructors(CUcontext ctx);

 private:
  struct Entry {
    void* key;
    void* value;
    Destructor destructor;
  };
  mutable std::mutex mutex_;
  // A client keeps one or two keys per context: a vector is the cheapest map for that.
  std::unordered_map<CUcontext, std::vector<Entry>> entries_;
};

// The process's store behind the CONTEXT_LOCAL_STORAGE table.
ContextStorage& ProcessContextStorage();

// Runs and forgets the context-local storage destructors of `ctx`. Every path that destroys a
// context's contents must call it while `ctx` is still usable: cuCtxDestroy,
// cuDevicePrimaryCtxRelease (last reference) and cuDevicePrimaryCtxReset.
void RunContextStorageDestructors(CUctx_st* ctx);

}  // namespace pvgpu::guest
