// Driver API: conditional graph nodes (docs/graphs.md). A conditional handle is the address of
// 4 bytes of device memory in its context, holding the node's value; kernels set it with
// cudaGraphSetConditional, which the cpu adapter's PTX engine provides (a checked store to that
// address, src/ptx/device_launch.cc). At launch the guest reads the value back once the work
// before the node is done and runs the body it selects (if/else, while, switch), each body an
// executable graph of its own instantiated with the node's graph.
//
// On every adapter: the cuda adapter gives the host's driver a definition of
// cudaGraphSetConditional that stores at the address (ptx/references.h) instead of NVIDIA's,
// which takes the driver's own handles.
#include "common/log.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/state.h"

ConditionalCell::~ConditionalCell() {
  using namespace pvgpu::guest;
  if (dptr != 0 && LiveContext(ctx)) (void)ReleaseDevice(dptr);  // else it went with its context
}

namespace pvgpu::guest {

namespace {

// The cell behind `handle` among the conditionals of `graph` or the graphs it is a body of.
std::shared_ptr<ConditionalCell> FindCell(const CUgraph_st* graph, CUgraphConditionalHandle handle) {
  for (const CUgraph_st* g = graph; g != nullptr;
       g = g->parent != nullptr ? g->parent->graph : nullptr) {
    for (const auto& cell : g->conditionals) {
      if (cell->dptr == handle) return cell;
    }
  }
  return nullptr;
}

}  // namespace

Code AddConditionalNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t count,
                        CUDA_CONDITIONAL_NODE_PARAMS* params) {
  const CUDA_CONDITIONAL_NODE_PARAMS& p = *params;
  const bool size_ok = (p.type == CU_GRAPH_COND_TYPE_IF && (p.size == 1 || p.size == 2)) ||
                       (p.type == CU_GRAPH_COND_TYPE_WHILE && p.size == 1) ||
                       (p.type == CU_GRAPH_COND_TYPE_SWITCH && p.size >= 1 && p.size <= 4096);
  if (!size_ok) return Code::kInvalidValue;
  CUgraph* bodies = nullptr;
  Code code = AddGraphNode(out, graph, deps, count, CU_GRAPH_NODE_TYPE_CONDITIONAL,
                           [&](CUgraphNode_st& node) {
                             std::shared_ptr<ConditionalCell> cell = FindCell(graph, p.handle);
                             if (cell == nullptr) return Code::kInvalidValue;
                             if (p.ctx != nullptr && p.ctx != cell->ctx) return Code::kInvalidValue;
                             node.conditional = p;
                             node.conditional.ctx = cell->ctx;
                             for (unsigned int i = 0; i < p.size; ++i) AddBody(node);
                             bodies = node.body_handles.data();
                             return Code::kOk;
                           });
  if (code == Code::kOk) params->phGraph_out = bodies;  // the node's own array, as CUDA's is
  return code;
}

namespace api {

Code GraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out, CUgraph hGraph,
                                  CUctx_st* ctx, unsigned int defaultLaunchValue,
                                  unsigned int flags) {
  if ((flags & ~CU_GRAPH_COND_ASSIGN_DEFAULT) != 0) return Code::kInvalidValue;
  {
    MutexLock lock(&GraphMutex());
    if (!LiveGraph(hGraph)) return Code::kInvalidValue;
  }
  auto cell = std::make_shared<ConditionalCell>();
  cell->ctx = ctx;
  cell->default_value = defaultLaunchValue;
  cell->assign_default = (flags & CU_GRAPH_COND_ASSIGN_DEFAULT) != 0;
  if (Code code = AllocateDevice(ctx, 4, &cell->dptr); code != Code::kOk) {
    cell->dptr = 0;
    return code;
  }
  if (Code code = MemcpyHtoD_v2(cell->dptr, &cell->default_value, 4); code != Code::kOk) {
    return code;
  }
  MutexLock lock(&GraphMutex());
  if (!LiveGraph(hGraph)) return Code::kInvalidValue;  // destroyed meanwhile; `cell` frees it
  hGraph->conditionals.push_back(cell);
  *pHandle_out = cell->dptr;
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
