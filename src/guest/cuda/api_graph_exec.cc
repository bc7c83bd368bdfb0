// Driver API: executable graphs (docs/graphs.md). Instantiation orders a private copy of the
// graph by its dependencies and hands its device work to the host in GraphExecCreate pieces;
// a launch posts one GraphExecLaunch per piece and runs the other nodes (host functions,
// copies from or to host memory) itself in between, on the launch's stream.
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

std::unordered_set<const CUgraphExec_st*>& Execs() {
  static auto* execs = new std::unordered_set<const CUgraphExec_st*>;
  return *execs;
}

CUgraphExec_st* FindExec(CUgraphExec handle) {
  return Execs().count(handle) != 0 ? handle : nullptr;
}

// The nodes of `graph` in an order that respects every dependency, child graphs inline (their
// own nodes in order, where the child node stands). False when the graph has a cycle.
bool Linearize(const CUgraph_st& graph, std::vector<const CUgraphNode_st*>* order) {
  std::unordered_map<const CUgraphNode_st*, size_t> waiting;
  std::vector<const CUgraphNode_st*> ready;
  for (const auto& node : graph.nodes) {
    waiting[node.get()] = node->deps.size();
    if (node->deps.empty()) ready.push_back(node.get());
  }
  std::reverse(ready.begin(), ready.end());  // creation order first
  size_t done = 0;
  while (!ready.empty()) {
    const CUgraphNode_st* node = ready.back();
    ready.pop_back();
    ++done;
    if (node->child != nullptr) {
      if (!Linearize(*node->child, order)) return false;
    } else {
      order->push_back(node);
    }
    std::vector<const CUgraphNode_st*> next;
    for (const CUgraphNode_st* dependent : node->dependents) {
      if (--waiting[dependent] == 0) next.push_back(dependent);
    }
    ready.insert(ready.end(), next.rbegin(), next.rend());
  }
  return done == graph.nodes.size();
}

// The device memory an address names: the context owning [dptr, dptr + size), if any.
CUctx_st* DeviceOwner(CUdeviceptr dptr, size_t size) {
  std::optional<CUctx_st*> owner = FindAllocation(dptr, size);
  return owner.has_value() ? *owner : nullptr;
}

// A copy node the host can run on its own: device to device, contiguous, in one context.
bool DeviceCopy(const CUDA_MEMCPY3D& c, CUctx_st** ctx) {
  const bool src_device = c.srcMemoryType == CU_MEMORYTYPE_DEVICE ||
                          (c.srcMemoryType == CU_MEMORYTYPE_UNIFIED && c.srcHost == nullptr);
  const bool dst_device = c.dstMemoryType == CU_MEMORYTYPE_DEVICE ||
                          (c.dstMemoryType == CU_MEMORYTYPE_UNIFIED && c.dstHost == nullptr);
  if (!src_device || !dst_device || c.Height != 1 || c.Depth != 1 || c.srcY != 0 || c.dstY != 0 ||
      c.srcZ != 0 || c.dstZ != 0 || c.srcLOD != 0 || c.dstLOD != 0) {
    return false;
  }
  const CUdeviceptr src = c.srcDevice + c.srcXInBytes, dst = c.dstDevice + c.dstXInBytes;
  CUctx_st* a = DeviceOwner(src, c.WidthInBytes);
  CUctx_st* b = DeviceOwner(dst, c.WidthInBytes);
  if (a == nullptr || a != b) return false;
  *ctx = a;
  return true;
}

// The wire form of one entry (session_graph.cc): op, size, the request and its payload,
// padded to 8 bytes.
template <typename Request>
void Append(std::vector<uint8_t>* out, const Request& request,
            std::span<const uint8_t> payload = {}) {
  const uint32_t header[2] = {static_cast<uint32_t>(Request::kOp),
                              static_cast<uint32_t>(sizeof(request) + payload.size())};
  const size_t start = out->size();
  out->resize(start + sizeof(header) + sizeof(request) + payload.size());
  std::memcpy(out->data() + start, header, sizeof(header));
  std::memcpy(out->data() + start + sizeof(header), &request, sizeof(request));
  if (!payload.empty()) {
    std::memcpy(out->data() + start + sizeof(header) + sizeof(request), payload.data(),
                payload.size());
  }
  out->resize((out->size() + 7) & ~size_t{7});
}

void DestroyPieces(CUgraphExec_st* exec) {
  if (exec->ctx == nullptr || !LiveContext(exec->ctx) ||
      exec->ctx->handle.load() != exec->ctx_handle) {
    return;  // the host dropped them with the context
  }
  for (const GraphStep& step : exec->steps) {
    for (uint64_t piece : step.pieces) {
      protocol::GraphExecDestroyRequest request;
      request.ctx = exec->ctx_handle;
      request.exec = piece;
      (void)exec->ctx->client->Post(request);
    }
  }
}

// Gives back the host's pieces of conditional bodies' executable graphs (each body's own
// bodies go with it: ~CUgraphExec_st).
void DestroyBodies(const std::map<const CUgraphNode_st*,
                                  std::vector<std::unique_ptr<CUgraphExec_st>>>& bodies) {
  for (const auto& [node, execs] : bodies) {
    for (const auto& body : execs) DestroyPieces(body.get());
  }
}

// Makes what `exec` runs from its graph: the steps, and the host's pieces of device work.
Code Build(CUgraphExec_st* exec, CUgraphNode* error_node) {
  std::vector<const CUgraphNode_st*> order;
  if (!Linearize(*exec->graph, &order)) return Code::kInvalidValue;  // a cycle
  // Which nodes the host runs, and the one context they run in.
  CUctx_st* ctx = nullptr;
  struct Lowered {
    const CUgraphNode_st* node;
    bool on_host;
  };
  std::vector<Lowered> lowered;
  for (const CUgraphNode_st* node : order) {
    if (!node->enabled) continue;  // an empty node: only its edges order the others
    CUctx_st* node_ctx = nullptr;
    bool on_host = false;
    switch (node->type) {
      case CU_GRAPH_NODE_TYPE_KERNEL:
        node_ctx = node->kernel.function->module->ctx;
        on_host = true;
        break;
      case CU_GRAPH_NODE_TYPE_MEMSET:
        node_ctx = node->ctx;
        on_host = true;
        break;
      case CU_GRAPH_NODE_TYPE_MEMCPY:
        on_host = DeviceCopy(node->copy, &node_ctx);
        break;
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        if (node->event == nullptr) return Code::kInvalidHandle;
        node_ctx = node->event->ctx;
        on_host = true;
        break;
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        if (node->event == nullptr) return Code::kInvalidHandle;
        break;
      case CU_GRAPH_NODE_TYPE_CONDITIONAL:  // evaluated by the guest at launch (RunConditional)
        break;
      case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        node_ctx = node->ctx;
        on_host = true;
        break;
      case CU_GRAPH_NODE_TYPE_EMPTY:
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:  // the memory is the graph's already: ordering only
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
        continue;
      default:
        break;
    }
    if (on_host) {
      if (ctx != nullptr && node_ctx != ctx) {
        PVGPU_WARN(
            "cuGraphInstantiate: a graph whose device nodes are in several contexts is "
            "not supported");
        if (error_node != nullptr) *error_node = const_cast<CUgraphNode_st*>(node->origin);
        return Code::kNotSupported;
      }
      ctx = node_ctx;
    }
    lowered.push_back({node, on_host});
  }
  if (ctx != nullptr && !LiveContext(ctx)) return Code::kContextIsDestroyed;

  std::vector<GraphStep> steps;
  std::vector<std::shared_ptr<CUfunc_st>> functions;
  std::vector<std::shared_ptr<CUevent_st>> events;
  const uint64_t ctx_handle = ctx != nullptr ? ctx->handle.load() : 0;
  // Pieces are cut to fit one message each.
  const size_t limit = ctx != nullptr ? ctx->client->max_payload() - 64 : 0;
  std::vector<uint8_t> entries;
  uint32_t count = 0;
  Code failed = Code::kOk;
  auto flush = [&] {
    if (count == 0 || failed != Code::kOk) return;
    protocol::GraphExecCreateRequest request;
    request.ctx = ctx_handle;
    request.exec = Client::NewHandle();
    request.count = count;
    failed = ctx->client->Call(request, entries);
    if (failed == Code::kOk) steps.back().pieces.push_back(request.exec);
    entries.clear();
    count = 0;
  };
  for (const Lowered& l : lowered) {
    if (!l.on_host) {
      flush();
      GraphStep step;
      step.node = l.node;
      steps.push_back(std::move(step));
      continue;
    }
    if (steps.empty() || !steps.back().on_host) {
      flush();
      GraphStep step;
      step.on_host = true;
      steps.push_back(std::move(step));
    }
    const CUgraphNode_st& node = *l.node;
    std::vector<uint8_t> entry;
    uint32_t made = 1;  // entries this node becomes
    switch (node.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL: {
        const GraphKernel& k = node.kernel;
        protocol::LaunchKernelRequest request;
        request.ctx = ctx_handle;
        request.module = k.function->module->handle;
        request.kernel = k.function->index;
        request.shared_bytes = k.shared_bytes;
        std::copy(k.grid, k.grid + 3, request.grid);
        std::copy(k.block, k.block + 3, request.block);
        request.cooperative = k.cooperative ? 1 : 0;
        Append(&entry, request, k.params);
        functions.push_back(k.function);
        break;
      }
      case CU_GRAPH_NODE_TYPE_MEMSET: {
        const CUDA_MEMSET_NODE_PARAMS& m = node.memset;
        protocol::MemsetRequest request;
        request.ctx = ctx_handle;
        request.dst = m.dst;
        request.pitch = m.height > 1 ? m.pitch : m.width * m.elementSize;
        request.value = m.value;
        request.element_size = m.elementSize;
        request.width = m.width;
        request.height = m.height;
        Append(&entry, request);
        break;
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY: {
        protocol::MemcpyDtoDRequest request;
        request.ctx = ctx_handle;
        request.dst = node.copy.dstDevice + node.copy.dstXInBytes;
        request.src = node.copy.srcDevice + node.copy.srcXInBytes;
        request.size = node.copy.WidthInBytes;
        Append(&entry, request);
        break;
      }
      case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        // Writes are 4- or 8-byte copies of the value, waits the host's StreamWaitValue, as
        // cuStreamBatchMemOp posts them on a stream (api_memops.cc); barriers order nothing
        // the host's in-order queue does not already.
        made = 0;
        for (const CUstreamBatchMemOpParams& op : node.memops) {
          const bool wide = op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64 ||
                            op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
          if (op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
              op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64) {
            protocol::MemcpyHtoDRequest request;
            request.ctx = ctx_handle;
            request.dst = op.writeValue.address;
            const uint64_t value = op.writeValue.value64;  // little-endian: the low bytes
            Append(&entry, request, {reinterpret_cast<const uint8_t*>(&value), wide ? 8u : 4u});
            ++made;
          } else if (op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                     op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64) {
            protocol::StreamWaitValueRequest request;
            request.ctx = ctx_handle;
            request.address = op.waitValue.address;
            request.value = wide ? op.waitValue.value64 : op.waitValue.value;
            request.width = wide ? 8 : 4;
            request.condition = op.waitValue.flags & 0xf;
            Append(&entry, request);
            ++made;
          }
        }
        break;
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD: {
        protocol::EventRecordRequest request;
        request.ctx = ctx_handle;
        request.event = node.event->handle;
        Append(&entry, request);
        steps.back().records.push_back(node.event);
        events.push_back(node.event);
        break;
      }
      default:
        break;
    }
    if (entry.size() > limit) {  // one node larger than a message
      failed = Code::kInvalidValue;
      break;
    }
    if (made == 0) continue;  // a batch of barriers only
    if (entries.size() + entry.size() > limit) flush();
    entries.insert(entries.end(), entry.begin(), entry.end());
    count += made;
  }
  flush();
  // Each conditional node's bodies, instantiated now as graphs of their own.
  std::map<const CUgraphNode_st*, std::vector<std::unique_ptr<CUgraphExec_st>>> bodies;
  for (const Lowered& l : lowered) {
    if (failed != Code::kOk || l.node->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) continue;
    for (const auto& body : l.node->bodies) {
      auto made_body = std::make_unique<CUgraphExec_st>();
      made_body->graph = CloneGraph(*body);
      failed = Build(made_body.get(), error_node);
      if (failed != Code::kOk) break;
      bodies[l.node].push_back(std::move(made_body));
    }
  }
  CUgraphExec_st made;
  made.steps = std::move(steps);
  made.ctx = ctx;
  made.ctx_handle = ctx_handle;
  if (failed != Code::kOk) {
    DestroyPieces(&made);  // the pieces made before the refusal; the old ones stay
    DestroyBodies(bodies);
    return failed;
  }
  DestroyPieces(exec);  // the previous pieces (an update), after the new ones exist
  DestroyBodies(exec->bodies);
  exec->bodies = std::move(bodies);
  exec->steps = std::move(made.steps);
  exec->ctx = ctx;
  exec->ctx_handle = ctx_handle;
  exec->functions = std::move(functions);
  exec->events = std::move(events);
  return Code::kOk;
}

// Runs a node the guest keeps, on `stream`, after what was submitted before it.
Code RunInGuest(const CUgraphNode_st& node, const StreamRef& stream) {
  switch (node.type) {
    case CU_GRAPH_NODE_TYPE_HOST:
      return api::LaunchHostFunc(stream, node.host.fn, node.host.userData);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (Code code = OrderAfterHostFuncs(stream); code != Code::kOk) return code;
      return api::Memcpy3DAsync_v2(&node.copy, stream);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      if (!objects().events.Contains(node.event.get())) return Code::kInvalidHandle;
      return api::StreamWaitEvent(stream, node.event.get(), 0);
    default:
      return Code::kOk;
  }
}

Code Instantiate(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags,
                 CUgraphNode* error_node) {
  constexpr unsigned long long kKnown = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0) {
    PVGPU_WARN("cuGraphInstantiate: graphs launched from the device are not supported");
    return Code::kNotSupported;
  }
  if ((flags & ~kKnown) != 0) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  if (!LiveGraph(hGraph)) return Code::kInvalidValue;
  auto exec = std::make_unique<CUgraphExec_st>();
  exec->graph = CloneGraph(*hGraph);
  exec->flags = flags;
  if (Code code = Build(exec.get(), error_node); code != Code::kOk) return code;
  *phGraphExec = exec.get();
  Execs().insert(exec.release());
  return Code::kOk;
}

// The executable graph's copy of `node` (a node of the graph it was instantiated from).
CUgraphNode_st* ExecNode(CUgraph_st& graph, CUgraphNode node) {
  for (const auto& n : graph.nodes) {
    if (n->origin == node) return n.get();
    if (n->child != nullptr) {
      if (CUgraphNode_st* found = ExecNode(*n->child, node)) return found;
    }
  }
  return nullptr;
}

// Changes one node of an executable graph and remakes its pieces.
template <typename Change>
Code SetExecNode(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeType type, Change change) {
  MutexLock lock(&GraphMutex());
  CUgraphExec_st* exec = FindExec(hGraphExec);
  if (exec == nullptr) return Code::kInvalidValue;
  CUgraphNode_st* node = ExecNode(*exec->graph, hNode);
  if (node == nullptr || node->type != type) return Code::kInvalidValue;
  if (Code code = change(*node); code != Code::kOk) return code;
  return Build(exec, nullptr);
}

// Whether `b` has `a`'s shape: the same nodes (by creation order), types and edges.
bool SameTopology(const CUgraph_st& a, const CUgraph_st& b, CUgraphExecUpdateResultInfo* info) {
  auto index = [](const CUgraph_st& g, const CUgraphNode_st* n) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].get() == n) return i;
    }
    return g.nodes.size();
  };
  if (a.nodes.size() != b.nodes.size()) {
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return false;
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const CUgraphNode_st& x = *a.nodes[i];
    const CUgraphNode_st& y = *b.nodes[i];
    if (x.type != y.type) {
      info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
      info->errorNode = const_cast<CUgraphNode_st*>(&y);
      return false;
    }
    bool same = x.deps.size() == y.deps.size();
    for (size_t d = 0; same && d < x.deps.size(); ++d) {
      same = index(a, x.deps[d]) == index(b, y.deps[d]);
    }
    if (!same) {
      info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
      info->errorNode = const_cast<CUgraphNode_st*>(&y);
      return false;
    }
    if (x.type == CU_GRAPH_NODE_TYPE_KERNEL &&
        x.kernel.function->module->ctx != y.kernel.function->module->ctx) {
      info->result = CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED;
      info->errorNode = const_cast<CUgraphNode_st*>(&y);
      return false;
    }
    if (x.child != nullptr && !SameTopology(*x.child, *y.child, info)) return false;
  }
  return true;
}

// The origins of `from`'s nodes given to `to`'s, node by node (same topology).
void KeepOrigins(const CUgraph_st& from, CUgraph_st& to) {
  for (size_t i = 0; i < from.nodes.size(); ++i) {
    to.nodes[i]->origin = from.nodes[i]->origin;
    if (from.nodes[i]->child != nullptr) KeepOrigins(*from.nodes[i]->child, *to.nodes[i]->child);
  }
}

// What a launch of an executable graph runs, copied under GraphMutex (PlanLaunch) so that it
// runs without the lock (RunPlan).
struct LaunchPlan {
  std::vector<GraphStep> steps;
  CUctx_st* ctx = nullptr;
  uint64_t ctx_handle = 0;
  std::map<const CUgraphNode_st*, std::vector<CUgraphExec_st*>> bodies;
  std::vector<std::shared_ptr<ConditionalCell>> reset;  // values to set to their default first
};

Code PlanLaunch(const CUgraphExec_st& exec, LaunchPlan* plan) {
  // Everything the pieces name must still be there for the host to find.
  if (exec.ctx != nullptr) {
    if (!LiveContext(exec.ctx)) return Code::kContextIsDestroyed;
    if (exec.ctx->handle.load() != exec.ctx_handle) return Code::kInvalidContext;
  }
  for (const auto& f : exec.functions) {
    if (!objects().modules.Contains(f->module)) return Code::kInvalidHandle;
  }
  for (const auto& e : exec.events) {
    if (!objects().events.Contains(e.get())) return Code::kInvalidHandle;
  }
  plan->steps = exec.steps;
  plan->ctx = exec.ctx;
  plan->ctx_handle = exec.ctx_handle;
  for (const auto& [node, execs] : exec.bodies) {
    for (const auto& body : execs) plan->bodies[node].push_back(body.get());
  }
  for (const auto& cell : exec.graph->conditionals) {
    if (cell->assign_default) plan->reset.push_back(cell);
  }
  return Code::kOk;
}

Code RunPlan(const LaunchPlan& plan, const StreamRef& hStream);

// A conditional node at launch: its value is read back once the work before it on the stream
// is done (a round trip per evaluation; a while loop pays one per iteration), then the body it
// selects runs on the stream like a graph launch of its own.
Code RunConditional(const CUgraphNode_st& node, const LaunchPlan& plan, const StreamRef& stream) {
  auto found = plan.bodies.find(&node);
  if (found == plan.bodies.end()) return Code::kInvalidValue;
  const std::vector<CUgraphExec_st*>& bodies = found->second;
  auto read = [&](unsigned int* value) -> Code {
    if (Code code = api::MemcpyDtoHAsync_v2(value, node.conditional.handle, 4, stream);
        code != Code::kOk) {
      return code;
    }
    return api::StreamSynchronize(stream);
  };
  auto run = [&](CUgraphExec_st* body) -> Code {
    LaunchPlan inner;
    {
      MutexLock lock(&GraphMutex());
      if (Code code = PlanLaunch(*body, &inner); code != Code::kOk) return code;
    }
    return RunPlan(inner, stream);
  };
  unsigned int value = 0;
  if (Code code = read(&value); code != Code::kOk) return code;
  switch (node.conditional.type) {
    case CU_GRAPH_COND_TYPE_IF:
      if (value != 0) return run(bodies[0]);
      return bodies.size() > 1 ? run(bodies[1]) : Code::kOk;
    case CU_GRAPH_COND_TYPE_WHILE:
      while (value != 0) {
        if (Code code = run(bodies[0]); code != Code::kOk) return code;
        if (Code code = read(&value); code != Code::kOk) return code;
      }
      return Code::kOk;
    case CU_GRAPH_COND_TYPE_SWITCH:
      return value < bodies.size() ? run(bodies[value]) : Code::kOk;
    default:
      return Code::kInvalidValue;
  }
}

Code RunPlan(const LaunchPlan& plan, const StreamRef& hStream) {
  const StreamRef target = plan.ctx != nullptr ? StreamFor(plan.ctx, hStream) : hStream;
  for (const GraphStep& step : plan.steps) {
    if (!step.on_host) {
      Code code = step.node->type == CU_GRAPH_NODE_TYPE_CONDITIONAL
                      ? RunConditional(*step.node, plan, hStream)
                      : RunInGuest(*step.node, hStream);
      if (code != Code::kOk) return code;
      continue;
    }
    if (Code code = OrderAfterHostFuncs(target); code != Code::kOk) return code;
    uint64_t seq = 0;
    for (uint64_t piece : step.pieces) {
      protocol::GraphExecLaunchRequest request;
      request.ctx = plan.ctx_handle;
      request.stream = target.wire();
      request.exec = piece;
      if (Code code = plan.ctx->client->Post(request, {}, &seq); code != Code::kOk) return code;
    }
    NoteSubmitted(target, seq);
    for (const auto& event : step.records) event->record_seq = seq;
  }
  return Code::kOk;
}

}  // namespace
}  // namespace pvgpu::guest

CUgraphExec_st::~CUgraphExec_st() { pvgpu::guest::DestroyBodies(bodies); }

namespace pvgpu::guest {
namespace api {

Code GraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  return Instantiate(phGraphExec, hGraph, flags, nullptr);
}

Code GraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  CUgraphNode error_node = nullptr;
  Code code = Instantiate(phGraphExec, hGraph, instantiateParams->flags, &error_node);
  instantiateParams->hErrNode_out = error_node;
  switch (code) {
    case Code::kOk:
      instantiateParams->result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
      break;
    case Code::kInvalidValue:
      instantiateParams->result_out = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
      break;
    default:
      instantiateParams->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
      break;
  }
  if (code == Code::kOk && (instantiateParams->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {
    StreamRef stream;
    code = ResolveStream(instantiateParams->hUploadStream, &stream);  // an upload is a no-op
  }
  return code;
}

// The CUDA 10 forms, with an error node and a log buffer.
Code GraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                         char* logBuffer, size_t bufferSize) {
  CUgraphNode error_node = nullptr;
  const Code code = Instantiate(phGraphExec, hGraph, 0, &error_node);
  if (phErrorNode != nullptr) *phErrorNode = error_node;
  if (logBuffer != nullptr && bufferSize > 0) {
    const char* text = code == Code::kOk ? "" : "pvgpu: the graph could not be instantiated";
    std::strncpy(logBuffer, text, bufferSize - 1);
    logBuffer[bufferSize - 1] = '\0';
  }
  return code;
}

Code GraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  MutexLock lock(&GraphMutex());
  CUgraphExec_st* exec = FindExec(hGraphExec);
  if (exec == nullptr) return Code::kInvalidValue;
  *flags = exec->flags;
  return Code::kOk;
}

Code GraphUpload(CUgraphExec hGraphExec, const StreamRef& hStream) {
  MutexLock lock(&GraphMutex());
  // The host has the pieces since instantiation: nothing to upload.
  return FindExec(hGraphExec) != nullptr ? Code::kOk : Code::kInvalidValue;
}

Code GraphLaunch(CUgraphExec hGraphExec, const StreamRef& hStream) {
  LaunchPlan plan;
  {
    MutexLock lock(&GraphMutex());
    CUgraphExec_st* exec = FindExec(hGraphExec);
    if (exec == nullptr) return Code::kInvalidValue;
    if (Code code = PlanLaunch(*exec, &plan); code != Code::kOk) return code;
  }
  if (CaptureActive()) {  // a launch into a capture is a child graph node
    auto node = std::make_unique<CUgraphNode_st>();
    node->type = CU_GRAPH_NODE_TYPE_GRAPH;
    {
      MutexLock lock(&GraphMutex());
      CUgraphExec_st* exec = FindExec(hGraphExec);
      if (exec == nullptr) return Code::kInvalidValue;
      node->child = CloneGraph(*exec->graph);
    }
    if (auto captured = CaptureNode(hStream, std::move(node))) return *captured;
  }
  // CU_GRAPH_COND_ASSIGN_DEFAULT: each such value starts every launch at its default.
  for (const auto& cell : plan.reset) {
    if (Code code = MemcpyHtoDAsync_v2(cell->dptr, &cell->default_value, 4, hStream);
        code != Code::kOk) {
      return code;
    }
  }
  return RunPlan(plan, hStream);
}

Code GraphExecDestroy(CUgraphExec hGraphExec) {
  MutexLock lock(&GraphMutex());
  CUgraphExec_st* exec = FindExec(hGraphExec);
  if (exec == nullptr) return Code::kInvalidValue;
  Execs().erase(exec);
  DestroyPieces(exec);
  delete exec;
  return Code::kOk;
}

Code GraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                        CUgraphExecUpdateResultInfo* resultInfo) {
  CUgraphExecUpdateResultInfo info{CU_GRAPH_EXEC_UPDATE_SUCCESS, nullptr, nullptr};
  Code code = Code::kOk;
  {
    MutexLock lock(&GraphMutex());
    CUgraphExec_st* exec = FindExec(hGraphExec);
    if (exec == nullptr || !LiveGraph(hGraph)) return Code::kInvalidValue;
    if (!SameTopology(*exec->graph, *hGraph, &info)) {
      code = kGraphExecUpdateFailure;
    } else {
      std::unique_ptr<CUgraph_st> graph = CloneGraph(*hGraph);
      KeepOrigins(*exec->graph, *graph);
      std::swap(exec->graph, graph);
      code = Build(exec, nullptr);
      if (code != Code::kOk) {
        std::swap(exec->graph, graph);  // the old graph stays, its pieces remade
        (void)Build(exec, nullptr);
        info.result = CU_GRAPH_EXEC_UPDATE_ERROR;
        code = kGraphExecUpdateFailure;
      }
    }
  }
  if (resultInfo != nullptr) *resultInfo = info;
  return code;
}

Code GraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                     CUgraphExecUpdateResult* updateResult_out) {
  CUgraphExecUpdateResultInfo info{};
  const Code code = GraphExecUpdate_v2(hGraphExec, hGraph, &info);
  if (hErrorNode_out != nullptr) *hErrorNode_out = info.errorNode;
  if (updateResult_out != nullptr) *updateResult_out = info.result;
  return code;
}

Code GraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                     const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  // Checked and packed like a kernel node's own parameters, on a scratch node.
  CUgraph_st* scratch = nullptr;
  CUgraphNode scratch_node = nullptr;
  if (Code code = GraphCreate(&scratch, 0); code != Code::kOk) return code;
  Code code = GraphAddKernelNode_v2(&scratch_node, scratch, nullptr, 0, nodeParams);
  if (code == Code::kOk) {
    code = SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL, [&](CUgraphNode_st& node) {
      if (node.kernel.function->module->ctx != scratch_node->kernel.function->module->ctx) {
        return Code::kInvalidValue;  // CUDA keeps a kernel node in its context
      }
      node.kernel = scratch_node->kernel;
      return Code::kOk;
    });
  }
  (void)GraphDestroy(scratch);
  return code;
}

Code GraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                  const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  CUDA_KERNEL_NODE_PARAMS_v2 p{};
  std::memcpy(&p, nodeParams, sizeof(*nodeParams));
  return GraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &p);
}

Code GraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                  const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  return SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMCPY, [&](CUgraphNode_st& node) {
    node.copy = *copyParams;
    return Code::kOk;
  });
}

Code GraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                  const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  const CUDA_MEMSET_NODE_PARAMS& p = *memsetParams;
  if ((p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4) || p.width == 0 ||
      p.height == 0) {
    return Code::kInvalidValue;
  }
  return SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMSET, [&](CUgraphNode_st& node) {
    node.memset = p;
    return Code::kOk;
  });
}

Code GraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                const CUDA_HOST_NODE_PARAMS* nodeParams) {
  if (nodeParams->fn == nullptr) return Code::kInvalidValue;
  return SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_HOST, [&](CUgraphNode_st& node) {
    node.host = *nodeParams;
    return Code::kOk;
  });
}

Code GraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      CUgraph childGraph) {
  return SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_GRAPH, [&](CUgraphNode_st& node) {
    CUgraphExecUpdateResultInfo info{};
    if (!LiveGraph(childGraph) || !SameTopology(*node.child, *childGraph, &info)) {
      return Code::kInvalidValue;
    }
    std::unique_ptr<CUgraph_st> child = CloneGraph(*childGraph);
    KeepOrigins(*node.child, *child);
    child->parent = &node;
    node.child = std::move(child);
    return Code::kOk;
  });
}

Code GraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      CUevent_st* event) {
  Ref<CUevent_st> ref = objects().events.Find(event);
  return SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, [&](CUgraphNode_st& node) {
    node.event = ref;
    return Code::kOk;
  });
}

Code GraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent_st* event) {
  Ref<CUevent_st> ref = objects().events.Find(event);
  return SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, [&](CUgraphNode_st& node) {
    node.event = ref;
    return Code::kOk;
  });
}

Code GraphExecBatchMemOpNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  const CUDA_BATCH_MEM_OP_NODE_PARAMS& p = *nodeParams;
  CUctx_st* ctx = nullptr;
  if (Code code = CheckMemOpNodeParams(p, &ctx); code != Code::kOk) return code;
  return SetExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, [&](CUgraphNode_st& node) {
    if (ctx != node.ctx) return Code::kInvalidValue;  // an executable graph keeps its context
    node.memops.assign(p.paramArray, p.paramArray + p.count);
    return Code::kOk;
  });
}

// Kernel, memcpy and memset nodes of an executable graph may be disabled and enabled again:
// the executable graph's copy of such a node, or nullptr (GraphMutex held).
static CUgraphNode_st* ToggleableNode(CUgraphExec hGraphExec, CUgraphNode hNode) {
  CUgraphExec_st* exec = FindExec(hGraphExec);
  if (exec == nullptr) return nullptr;
  CUgraphNode_st* node = ExecNode(*exec->graph, hNode);
  const bool toggleable = node != nullptr && (node->type == CU_GRAPH_NODE_TYPE_KERNEL ||
                                              node->type == CU_GRAPH_NODE_TYPE_MEMCPY ||
                                              node->type == CU_GRAPH_NODE_TYPE_MEMSET);
  return toggleable ? node : nullptr;
}

Code GraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = ToggleableNode(hGraphExec, hNode);
  if (node == nullptr) return Code::kInvalidValue;
  const bool enabled = isEnabled != 0;
  if (node->enabled == enabled) return Code::kOk;
  node->enabled = enabled;
  if (Code code = Build(FindExec(hGraphExec), nullptr); code != Code::kOk) {
    node->enabled = !enabled;  // Build leaves the executable graph as it was
    return code;
  }
  return Code::kOk;
}

Code GraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int* isEnabled) {
  MutexLock lock(&GraphMutex());
  const CUgraphNode_st* node = ToggleableNode(hGraphExec, hNode);
  if (node == nullptr) return Code::kInvalidValue;
  *isEnabled = node->enabled ? 1 : 0;
  return Code::kOk;
}

Code GraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                            CUgraphNodeParams* nodeParams) {
  CUgraphNodeParams& p = *nodeParams;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS_v2 k{};
      std::memcpy(&k, &p.kernel, sizeof(k));
      return GraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return GraphExecMemcpyNodeSetParams(hGraphExec, hNode, &p.memcpy.copyParams,
                                          p.memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS m{};
      std::memcpy(&m, &p.memset, sizeof(m));
      return GraphExecMemsetNodeSetParams(hGraphExec, hNode, &m, p.memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      CUDA_HOST_NODE_PARAMS h{p.host.fn, p.host.userData};
      return GraphExecHostNodeSetParams(hGraphExec, hNode, &h);
    }
    default:
      return Code::kNotSupported;
  }
}

}  // namespace api
}  // namespace pvgpu::guest
