// Driver API: graph memory nodes (docs/graphs.md). An allocation node's memory is allocated
// when the node is made, by cuGraphAddMemAllocNode or by capturing cuMemAllocAsync, at the
// address the node reports, and stays with the node until the last graph, clone or executable
// graph holding it goes. CUDA gives the same guarantee the other way round: the address is
// fixed for the graph's life, the memory valid from the allocation node to the free node of
// each launch, and touching it outside that window is undefined. So a launch runs allocation
// and free nodes as ordering points only: no message, and a graph of temporaries costs its
// memory once, not once per launch. Memory a launch leaves allocated (no free node) may be
// freed with cuMemFree or cuMemFreeAsync; it stays with its graph for the next launch.
//
// Counters: USED and RESERVED are the bytes graphs hold on a device (the same figure: pvgpu
// keeps no graph memory beyond what nodes hold), with their high-water marks.
#include <map>

#include "common/log.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry;  // never destroyed: used until the process exits
    return *registry;
  }

  void Add(const GraphAllocation& a) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    live_[a.dptr] = a.ctx->device;
    Counters& c = counters_[a.ctx->device];
    c.used += a.size;
    c.high = std::max(c.high, c.used);
  }
  void Remove(const GraphAllocation& a) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    live_.erase(a.dptr);
    counters_[a.ctx->device].used -= a.size;
  }
  bool Contains(CUdeviceptr dptr) const EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return live_.count(dptr) != 0;
  }
  uint64_t Used(CUdevice device) const EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = counters_.find(device);
    return it == counters_.end() ? 0 : it->second.used;
  }
  uint64_t High(CUdevice device) const EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = counters_.find(device);
    return it == counters_.end() ? 0 : it->second.high;
  }
  void ResetHigh(CUdevice device) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    Counters& c = counters_[device];
    c.high = c.used;
  }

 private:
  struct Counters {
    uint64_t used = 0;
    uint64_t high = 0;
  };
  Registry() = default;
  mutable Mutex mutex_;
  std::map<CUdeviceptr, CUdevice> live_ GUARDED_BY(mutex_);
  std::map<CUdevice, Counters> counters_ GUARDED_BY(mutex_);
};

}  // namespace

Code MakeGraphAllocation(const CUDA_MEM_ALLOC_NODE_PARAMS& params,
                         std::shared_ptr<GraphAllocation>* out) {
  const CUmemPoolProps& pool = params.poolProps;
  if (params.bytesize == 0 || pool.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      pool.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      DriverState::Get().device(pool.location.id) == nullptr ||
      params.accessDescCount > static_cast<size_t>(DriverState::Get().device_count()) ||
      (params.accessDescCount > 0 && params.accessDescs == nullptr)) {
    return Code::kInvalidValue;
  }
  if (pool.handleTypes != CU_MEM_HANDLE_TYPE_NONE) return Code::kInvalidValue;  // as CUDA says
  for (size_t i = 0; i < params.accessDescCount; ++i) {
    const CUmemAccessDesc& d = params.accessDescs[i];
    if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        DriverState::Get().device(d.location.id) == nullptr) {
      return Code::kInvalidValue;
    }
    if (d.location.id != pool.location.id && d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) {
      PVGPU_WARN("cuGraphAddMemAllocNode: access from another device (peer access) is not "
                 "supported by pvgpu");
      return Code::kNotSupported;
    }
  }
  CUctx_st* ctx = nullptr;
  if (Code code = CurrentLiveContext(&ctx); code != Code::kOk) return code;
  if (ctx->device != pool.location.id) {
    PVGPU_WARN("cuGraphAddMemAllocNode: memory of device "
               << pool.location.id << " from a context of device " << ctx->device
               << " is not supported by pvgpu");
    return Code::kNotSupported;
  }
  auto allocation = std::make_shared<GraphAllocation>();
  allocation->ctx = ctx;
  allocation->size = params.bytesize;
  allocation->pool = pool;
  allocation->access.assign(params.accessDescs, params.accessDescs + params.accessDescCount);
  if (Code code = AllocateDevice(ctx, params.bytesize, &allocation->dptr); code != Code::kOk) {
    allocation->dptr = 0;
    return code;
  }
  Registry::Get().Add(*allocation);
  *out = std::move(allocation);
  return Code::kOk;
}

bool IsGraphAllocation(CUdeviceptr dptr) { return Registry::Get().Contains(dptr); }

bool FreeGraphAllocation(CUdeviceptr dptr, Code* code) {
  if (!Registry::Get().Contains(dptr)) return false;
  *code = Code::kOk;
  return true;
}

namespace api {

Code GraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                          const CUgraphNode* dependencies, size_t numDependencies,
                          CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  std::shared_ptr<GraphAllocation> allocation;
  if (Code code = MakeGraphAllocation(*nodeParams, &allocation); code != Code::kOk) return code;
  const CUdeviceptr dptr = allocation->dptr;
  Code code = AddGraphNode(phGraphNode, hGraph, dependencies, numDependencies,
                           CU_GRAPH_NODE_TYPE_MEM_ALLOC, [&](CUgraphNode_st& node) {
                             node.allocation = std::move(allocation);
                             return Code::kOk;
                           });
  if (code == Code::kOk) nodeParams->dptr = dptr;
  return code;  // on failure `allocation` frees the memory
}

Code GraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = FindTypedNode(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC, &node); code != Code::kOk) {
    return code;
  }
  const GraphAllocation& a = *node->allocation;
  params_out->poolProps = a.pool;
  params_out->accessDescs = a.access.empty() ? nullptr : a.access.data();
  params_out->accessDescCount = a.access.size();
  params_out->bytesize = a.size;
  params_out->dptr = a.dptr;
  return Code::kOk;
}

Code GraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                         const CUgraphNode* dependencies, size_t numDependencies,
                         CUdeviceptr dptr) {
  if (!IsGraphAllocation(dptr)) return Code::kInvalidValue;
  return AddGraphNode(phGraphNode, hGraph, dependencies, numDependencies,
                      CU_GRAPH_NODE_TYPE_MEM_FREE, [&](CUgraphNode_st& node) {
                        node.freed = dptr;
                        return Code::kOk;
                      });
}

Code GraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = FindTypedNode(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE, &node); code != Code::kOk) {
    return code;
  }
  *dptr_out = node->freed;
  return Code::kOk;
}

// Nothing to give back: graph memory is held only by the nodes of graphs that still exist.
Code DeviceGraphMemTrim(const Device& device) {
  (void)device;
  return Code::kOk;
}

Code DeviceGetGraphMemAttribute(const Device& device, CUgraphMem_attribute attr, void* value) {
  Registry& r = Registry::Get();
  auto* out = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
      *out = r.Used(device.ordinal);
      return Code::kOk;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
      *out = r.High(device.ordinal);
      return Code::kOk;
    default:
      return Code::kInvalidValue;
  }
}

Code DeviceSetGraphMemAttribute(const Device& device, CUgraphMem_attribute attr, void* value) {
  if (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
    return Code::kInvalidValue;
  }
  if (*static_cast<const cuuint64_t*>(value) != 0) return Code::kInvalidValue;  // reset only
  Registry::Get().ResetHigh(device.ordinal);
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest

GraphAllocation::~GraphAllocation() {
  using namespace pvgpu::guest;
  if (dptr == 0) return;
  Registry::Get().Remove(*this);
  if (LiveContext(ctx)) (void)ReleaseDevice(dptr);  // else it went with its context
}
