// Driver API: building graphs (docs/graphs.md). Graphs, their nodes and user objects live in
// the guest only; every handle is looked up in the registry before it is used.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_set>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/launch.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// Every live graph (child graphs included), node and user object, by address.
struct Registry {
  std::unordered_set<const CUgraph_st*> graphs;
  std::unordered_set<const CUgraphNode_st*> nodes;
  std::unordered_set<const CUuserObject_st*> user_objects;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: exit may still release objects
  return *r;
}

CUgraph_st* FindGraph(CUgraph handle) {
  return registry().graphs.count(handle) != 0 ? handle : nullptr;
}

CUgraphNode_st* FindNode(CUgraphNode handle) {
  return registry().nodes.count(handle) != 0 ? handle : nullptr;
}

void ReleaseUserObject(CUuserObject_st* object, unsigned int count) {
  object->refs -= std::min(count, object->refs);
  if (object->refs != 0) return;
  registry().user_objects.erase(object);
  // CUDA runs destructors on a thread of its own once no launch needs the object any more; the
  // object's owner may not call CUDA from it either way, so it is called here.
  if (object->destroy != nullptr) object->destroy(object->ptr);
  delete object;
}

// The dependencies a call names: nodes of `graph`, no duplicates.
Code CheckDeps(CUgraph_st* graph, const CUgraphNode* deps, size_t count,
               std::vector<CUgraphNode_st*>* out) {
  if (count > 0 && deps == nullptr) return Code::kInvalidValue;
  for (size_t i = 0; i < count; ++i) {
    CUgraphNode_st* dep = FindNode(deps[i]);
    if (dep == nullptr || dep->graph != graph) return Code::kInvalidValue;
    if (std::find(out->begin(), out->end(), dep) != out->end()) return Code::kInvalidValue;
    out->push_back(dep);
  }
  return Code::kOk;
}

// The function a kernel node names: func, else the CUkernel kern in the current context.
Code KernelFromParams(const CUDA_KERNEL_NODE_PARAMS_v2& p, GraphKernel* kernel) {
  Ref<CUfunc_st> f;
  CUfunction handle = p.func != nullptr ? p.func : reinterpret_cast<CUfunction>(p.kern);
  if (handle == nullptr) return Code::kInvalidValue;
  if (Code code = ResolveFunctionOrKernel(handle, &f); code != Code::kOk) return code;
  const unsigned int grid[3] = {p.gridDimX, p.gridDimY, p.gridDimZ};
  const unsigned int block[3] = {p.blockDimX, p.blockDimY, p.blockDimZ};
  if (Code code = MakeKernel(f.get(), grid, block, p.sharedMemBytes, p.kernelParams, p.extra, false,
                             kernel);
      code != Code::kOk) {
    return code;
  }
  if (FindFunction(f.get()) != nullptr) kernel->function = f;  // else MakeKernel's alias
  return Code::kOk;
}

CUDA_KERNEL_NODE_PARAMS_v2 KernelParams(const CUgraphNode_st& node) {
  const GraphKernel& k = node.kernel;
  CUDA_KERNEL_NODE_PARAMS_v2 p{};
  p.func = k.function.get();
  p.gridDimX = k.grid[0], p.gridDimY = k.grid[1], p.gridDimZ = k.grid[2];
  p.blockDimX = k.block[0], p.blockDimY = k.block[1], p.blockDimZ = k.block[2];
  p.sharedMemBytes = k.shared_bytes;
  p.kernelParams = const_cast<void**>(k.param_pointers.data());
  p.extra = nullptr;
  p.kern = nullptr;
  p.ctx = k.function->module->ctx;
  return p;
}

CUDA_KERNEL_NODE_PARAMS_v2 FromV1(const CUDA_KERNEL_NODE_PARAMS_v1& v1) {
  CUDA_KERNEL_NODE_PARAMS_v2 p{};
  std::memcpy(&p, &v1, sizeof(v1));  // v2 extends v1
  return p;
}

Code CheckMemset(const CUDA_MEMSET_NODE_PARAMS& p) {
  if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4) return Code::kInvalidValue;
  if (p.width == 0 || p.height == 0) return Code::kInvalidValue;
  if (p.height > 1 && p.pitch < p.width * p.elementSize) return Code::kInvalidValue;
  return Code::kOk;
}

Code ContextOrCurrent(CUcontext given, CUctx_st** ctx) {
  if (given != nullptr) return ResolveContext(given, ctx);
  return CurrentLiveContext(ctx);
}

// Adds a node of `type` built by `fill` after the named dependencies.
template <typename Fill>
Code Add(CUgraphNode* out, CUgraph graph_handle, const CUgraphNode* deps, size_t count,
         CUgraphNodeType type, Fill fill) {
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(graph_handle);
  if (graph == nullptr) return Code::kInvalidValue;
  std::vector<CUgraphNode_st*> checked;
  if (Code code = CheckDeps(graph, deps, count, &checked); code != Code::kOk) return code;
  auto node = std::make_unique<CUgraphNode_st>();
  node->type = type;
  if (Code code = fill(*node); code != Code::kOk) return code;
  *out = AddNode(graph, std::move(node), checked);
  return Code::kOk;
}

// A node of one type, for the per-type get and set calls.
Code TypedNode(CUgraphNode handle, CUgraphNodeType type, CUgraphNode_st** node) {
  *node = FindNode(handle);
  if (*node == nullptr || (*node)->type != type) return Code::kInvalidValue;
  return Code::kOk;
}

void Unlink(CUgraphNode_st* from, CUgraphNode_st* to) {
  auto erase = [](std::vector<CUgraphNode_st*>& v, CUgraphNode_st* n) {
    v.erase(std::remove(v.begin(), v.end(), n), v.end());
  };
  erase(from->dependents, to);
  erase(to->deps, from);
}

void ForgetNodes(const CUgraph_st& graph) {
  for (const auto& node : graph.nodes) {
    registry().nodes.erase(node.get());
    if (node->child != nullptr) {
      registry().graphs.erase(node->child.get());
      ForgetNodes(*node->child);
    }
    for (const auto& body : node->bodies) {
      registry().graphs.erase(body.get());
      ForgetNodes(*body);
    }
  }
}

void RegisterNodes(const CUgraph_st& graph) {
  for (const auto& node : graph.nodes) {
    registry().nodes.insert(node.get());
    if (node->child != nullptr) {
      registry().graphs.insert(node->child.get());
      RegisterNodes(*node->child);
    }
    for (const auto& body : node->bodies) {
      registry().graphs.insert(body.get());
      RegisterNodes(*body);
    }
  }
}

// Edges out of arrays as the _v2 calls take them (edge data: only the default, zeroed).
Code CheckEdgeData(const CUgraphEdgeData* data, size_t count) {
  if (data == nullptr) return Code::kOk;
  static const CUgraphEdgeData kDefault{};
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(&data[i], &kDefault, sizeof(kDefault)) != 0) return Code::kNotSupported;
  }
  return Code::kOk;
}

// Writes up to *count entries of `items` (when `out` is given) and the number there is.
template <typename T>
void Report(const std::vector<T>& items, T* out, size_t* count) {
  if (out != nullptr) {
    const size_t n = std::min(*count, items.size());
    std::copy(items.begin(), items.begin() + n, out);
    for (size_t i = n; i < *count; ++i) out[i] = T{};
  }
  if (out == nullptr || *count > items.size()) *count = items.size();
}

void ZeroEdges(CUgraphEdgeData* data, size_t count) {
  if (data != nullptr) std::memset(data, 0, count * sizeof(CUgraphEdgeData));
}

const char* TypeName(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return "memset";
    case CU_GRAPH_NODE_TYPE_HOST:
      return "host";
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return "graph";
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return "empty";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return "wait_event";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return "event_record";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      return "mem_alloc";
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return "mem_free";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return "conditional";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return "batch_mem_op";
    default:
      return "other";
  }
}

void DotGraph(FILE* out, const CUgraph_st& graph, const std::string& prefix) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const CUgraphNode_st& node = *graph.nodes[i];
    const std::string name = prefix + std::to_string(i);
    std::string label = std::string(TypeName(node.type)) + " " + std::to_string(i);
    if (node.type == CU_GRAPH_NODE_TYPE_KERNEL && node.kernel.function->kernel != nullptr) {
      label += "\\n" + node.kernel.function->kernel->name;
      label += "\\n<<<(" + std::to_string(node.kernel.grid[0]) + "," +
               std::to_string(node.kernel.grid[1]) + "," + std::to_string(node.kernel.grid[2]) +
               "),(" + std::to_string(node.kernel.block[0]) + "," +
               std::to_string(node.kernel.block[1]) + "," + std::to_string(node.kernel.block[2]) +
               ")>>>";
    }
    if (node.child != nullptr) {
      std::fprintf(out, "subgraph cluster_%s {\nlabel=\"%s\";\n", name.c_str(), label.c_str());
      DotGraph(out, *node.child, name + "_");
      std::fprintf(out, "}\n");
    }
    std::fprintf(out, "\"%s\" [label=\"%s\"];\n", name.c_str(), label.c_str());
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const CUgraphNode_st* dep : graph.nodes[i]->deps) {
      const auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(),
                                   [&](const auto& n) { return n.get() == dep; });
      std::fprintf(out, "\"%s%zu\" -> \"%s%zu\";\n", prefix.c_str(),
                   static_cast<size_t>(it - graph.nodes.begin()), prefix.c_str(), i);
    }
  }
}

}  // namespace

Mutex& GraphMutex() {
  static Mutex* mutex = new Mutex;
  return *mutex;
}

void DropUserObject(CUuserObject_st* object, unsigned int count) {
  ReleaseUserObject(object, count);
}

CUgraph_st* NewGraph() {
  auto* graph = new CUgraph_st;
  registry().graphs.insert(graph);
  return graph;
}

bool LiveGraph(const CUgraph_st* graph) { return registry().graphs.count(graph) != 0; }

CUgraphNode_st* AddNode(CUgraph_st* graph, std::unique_ptr<CUgraphNode_st> node,
                        const std::vector<CUgraphNode_st*>& deps) {
  node->graph = graph;
  node->deps = deps;
  for (CUgraphNode_st* dep : deps) dep->dependents.push_back(node.get());
  if (node->child != nullptr) {
    node->child->parent = node.get();
    registry().graphs.insert(node->child.get());
    RegisterNodes(*node->child);
  }
  registry().nodes.insert(node.get());
  graph->nodes.push_back(std::move(node));
  return graph->nodes.back().get();
}

void DestroyGraph(CUgraph_st* graph) {
  registry().graphs.erase(graph);
  ForgetNodes(*graph);
  delete graph;
}

Code AddGraphNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t count,
                  CUgraphNodeType type, const std::function<Code(CUgraphNode_st&)>& fill) {
  return Add(out, graph, deps, count, type, fill);
}

Code FindTypedNode(CUgraphNode handle, CUgraphNodeType type, CUgraphNode_st** node) {
  return TypedNode(handle, type, node);
}

Code CheckMemOpNodeParams(const CUDA_BATCH_MEM_OP_NODE_PARAMS& params, CUctx_st** ctx) {
  if (Code code = ContextOrCurrent(params.ctx, ctx); code != Code::kOk) return code;
  if (params.flags != 0) return Code::kInvalidValue;
  return CheckMemOps(*ctx, params.paramArray, params.count);
}

CUgraph_st* AddBody(CUgraphNode_st& node) {
  auto body = std::make_unique<CUgraph_st>();
  body->parent = &node;
  registry().graphs.insert(body.get());
  node.body_handles.push_back(body.get());
  node.bodies.push_back(std::move(body));
  node.conditional.phGraph_out = node.body_handles.data();
  return node.bodies.back().get();
}

std::unique_ptr<CUgraph_st> CloneGraph(const CUgraph_st& graph) {
  auto clone = std::make_unique<CUgraph_st>();
  std::map<const CUgraphNode_st*, CUgraphNode_st*> copies;
  for (const auto& original : graph.nodes) {
    auto node = std::make_unique<CUgraphNode_st>();
    node->graph = clone.get();
    node->type = original->type;
    node->origin = original.get();
    node->kernel = original->kernel;
    const auto* k =
        original->kernel.function != nullptr ? original->kernel.function->kernel : nullptr;
    node->kernel.param_pointers.clear();
    if (k != nullptr) {
      for (uint32_t offset : k->param_offsets) {
        node->kernel.param_pointers.push_back(node->kernel.params.data() + offset);
      }
    }
    node->copy = original->copy;
    node->memset = original->memset;
    node->ctx = original->ctx;
    node->host = original->host;
    node->event = original->event;
    node->enabled = original->enabled;
    node->conditional = original->conditional;
    for (const auto& body : original->bodies) {
      node->bodies.push_back(CloneGraph(*body));
      node->bodies.back()->parent = node.get();
      node->body_handles.push_back(node->bodies.back().get());
    }
    node->conditional.phGraph_out = node->body_handles.empty() ? nullptr : node->body_handles.data();
    node->memops = original->memops;
    node->allocation = original->allocation;  // the clone holds the same memory
    node->freed = original->freed;
    if (original->child != nullptr) {
      node->child = CloneGraph(*original->child);
      node->child->parent = node.get();
    }
    copies[original.get()] = node.get();
    clone->nodes.push_back(std::move(node));
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const CUgraphNode_st* dep : graph.nodes[i]->deps)
      clone->nodes[i]->deps.push_back(copies[dep]);
    for (const CUgraphNode_st* next : graph.nodes[i]->dependents) {
      clone->nodes[i]->dependents.push_back(copies[next]);
    }
  }
  for (const auto& [object, count] : graph.user_objects) {
    object->refs += count;
    clone->user_objects[object] += count;
  }
  clone->conditionals = graph.conditionals;
  return clone;
}

Code MakeKernel(CUfunc_st* f, const unsigned int grid[3], const unsigned int block[3],
                unsigned int shared_bytes, void** kernelParams, void** extra, bool cooperative,
                GraphKernel* kernel) {
  GraphKernel k;
  if (Code code =
          PackLaunch(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                     f->module->ctx, kernelParams, extra, cooperative, &k.params);
      code != Code::kOk) {
    return code;
  }
  k.function = std::shared_ptr<CUfunc_st>(std::shared_ptr<void>(), f);
  std::copy(grid, grid + 3, k.grid);
  std::copy(block, block + 3, k.block);
  k.shared_bytes = shared_bytes;
  k.cooperative = cooperative;
  for (uint32_t offset : f->kernel->param_offsets) {
    k.param_pointers.push_back(k.params.data() + offset);
  }
  *kernel = std::move(k);
  return Code::kOk;
}

namespace api {

Code GraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  *phGraph = NewGraph();
  return Code::kOk;
}

Code GraphDestroy(CUgraph hGraph) {
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(hGraph);
  if (graph == nullptr || graph->parent != nullptr) return Code::kInvalidValue;
  DestroyGraph(graph);
  return Code::kOk;
}

Code GraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(originalGraph);
  if (graph == nullptr) return Code::kInvalidValue;
  CUgraph_st* clone = CloneGraph(*graph).release();
  registry().graphs.insert(clone);
  RegisterNodes(*clone);
  *phGraphClone = clone;
  return Code::kOk;
}

Code GraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph) {
  MutexLock lock(&GraphMutex());
  CUgraph_st* clone = FindGraph(hClonedGraph);
  if (clone == nullptr || FindNode(hOriginalNode) == nullptr) return Code::kInvalidValue;
  for (const auto& node : clone->nodes) {
    if (node->origin == hOriginalNode) {
      *phNode = node.get();
      return Code::kOk;
    }
  }
  return Code::kInvalidValue;
}

Code GraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = FindNode(hNode);
  if (node == nullptr) return Code::kInvalidValue;
  *type = node->type;
  return Code::kOk;
}

Code GraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(hGraph);
  if (graph == nullptr) return Code::kInvalidValue;
  std::vector<CUgraphNode> all;
  for (const auto& node : graph->nodes) all.push_back(node.get());
  Report(all, nodes, numNodes);
  return Code::kOk;
}

Code GraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(hGraph);
  if (graph == nullptr) return Code::kInvalidValue;
  std::vector<CUgraphNode> roots;
  for (const auto& node : graph->nodes) {
    if (node->deps.empty()) roots.push_back(node.get());
  }
  Report(roots, rootNodes, numRootNodes);
  return Code::kOk;
}

Code GraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                      size_t* numEdges) {
  if ((from == nullptr) != (to == nullptr)) return Code::kInvalidValue;
  if (edgeData != nullptr && from == nullptr) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(hGraph);
  if (graph == nullptr) return Code::kInvalidValue;
  std::vector<CUgraphNode> froms, tos;
  for (const auto& node : graph->nodes) {
    for (CUgraphNode_st* dep : node->deps) {
      froms.push_back(dep);
      tos.push_back(node.get());
    }
  }
  const size_t asked = *numEdges;
  Report(froms, from, numEdges);
  size_t again = asked;
  Report(tos, to, &again);
  if (edgeData != nullptr) ZeroEdges(edgeData, asked);
  return Code::kOk;
}

Code GraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges) {
  return GraphGetEdges_v2(hGraph, from, to, nullptr, numEdges);
}

Code GraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies,
                                 CUgraphEdgeData* edgeData, size_t* numDependencies) {
  if (edgeData != nullptr && dependencies == nullptr) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = FindNode(hNode);
  if (node == nullptr) return Code::kInvalidValue;
  const size_t asked = *numDependencies;
  std::vector<CUgraphNode> deps(node->deps.begin(), node->deps.end());
  Report(deps, dependencies, numDependencies);
  if (edgeData != nullptr) ZeroEdges(edgeData, asked);
  return Code::kOk;
}

Code GraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies,
                              size_t* numDependencies) {
  return GraphNodeGetDependencies_v2(hNode, dependencies, nullptr, numDependencies);
}

Code GraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                   CUgraphEdgeData* edgeData, size_t* numDependentNodes) {
  if (edgeData != nullptr && dependentNodes == nullptr) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = FindNode(hNode);
  if (node == nullptr) return Code::kInvalidValue;
  const size_t asked = *numDependentNodes;
  std::vector<CUgraphNode> next(node->dependents.begin(), node->dependents.end());
  Report(next, dependentNodes, numDependentNodes);
  if (edgeData != nullptr) ZeroEdges(edgeData, asked);
  return Code::kOk;
}

Code GraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                size_t* numDependentNodes) {
  return GraphNodeGetDependentNodes_v2(hNode, dependentNodes, nullptr, numDependentNodes);
}

Code GraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                             const CUgraphEdgeData* edgeData, size_t numDependencies) {
  if (numDependencies > 0 && (from == nullptr || to == nullptr)) return Code::kInvalidValue;
  if (Code code = CheckEdgeData(edgeData, numDependencies); code != Code::kOk) return code;
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(hGraph);
  if (graph == nullptr) return Code::kInvalidValue;
  // All checked before any is added, so that a refused call changes nothing.
  for (size_t i = 0; i < numDependencies; ++i) {
    CUgraphNode_st* a = FindNode(from[i]);
    CUgraphNode_st* b = FindNode(to[i]);
    if (a == nullptr || b == nullptr || a->graph != graph || b->graph != graph || a == b) {
      return Code::kInvalidValue;
    }
    if (std::find(b->deps.begin(), b->deps.end(), a) != b->deps.end()) return Code::kInvalidValue;
  }
  for (size_t i = 0; i < numDependencies; ++i) {
    from[i]->dependents.push_back(to[i]);
    to[i]->deps.push_back(from[i]);
  }
  return Code::kOk;
}

Code GraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                          size_t numDependencies) {
  return GraphAddDependencies_v2(hGraph, from, to, nullptr, numDependencies);
}

Code GraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                const CUgraphEdgeData* edgeData, size_t numDependencies) {
  if (numDependencies > 0 && (from == nullptr || to == nullptr)) return Code::kInvalidValue;
  if (Code code = CheckEdgeData(edgeData, numDependencies); code != Code::kOk) return code;
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(hGraph);
  if (graph == nullptr) return Code::kInvalidValue;
  for (size_t i = 0; i < numDependencies; ++i) {
    CUgraphNode_st* a = FindNode(from[i]);
    CUgraphNode_st* b = FindNode(to[i]);
    if (a == nullptr || b == nullptr || a->graph != graph || b->graph != graph) {
      return Code::kInvalidValue;
    }
    if (std::find(b->deps.begin(), b->deps.end(), a) == b->deps.end()) return Code::kInvalidValue;
  }
  for (size_t i = 0; i < numDependencies; ++i) Unlink(from[i], to[i]);
  return Code::kOk;
}

Code GraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                             size_t numDependencies) {
  return GraphRemoveDependencies_v2(hGraph, from, to, nullptr, numDependencies);
}

Code GraphDestroyNode(CUgraphNode hNode) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = FindNode(hNode);
  if (node == nullptr) return Code::kInvalidValue;
  for (CUgraphNode_st* dep : std::vector<CUgraphNode_st*>(node->deps)) Unlink(dep, node);
  for (CUgraphNode_st* next : std::vector<CUgraphNode_st*>(node->dependents)) Unlink(node, next);
  registry().nodes.erase(node);
  if (node->child != nullptr) {
    registry().graphs.erase(node->child.get());
    ForgetNodes(*node->child);
  }
  auto& nodes = node->graph->nodes;
  nodes.erase(
      std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.get() == node; }));
  return Code::kOk;
}

// Kernel nodes.
Code GraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                           const CUgraphNode* dependencies, size_t numDependencies,
                           const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_KERNEL,
             [&](CUgraphNode_st& node) { return KernelFromParams(*nodeParams, &node.kernel); });
}

Code GraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  const CUDA_KERNEL_NODE_PARAMS_v2 p = FromV1(*nodeParams);
  return GraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies, &p);
}

Code GraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_KERNEL, &node); code != Code::kOk) {
    return code;
  }
  *nodeParams = KernelParams(*node);
  return Code::kOk;
}

Code GraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  CUDA_KERNEL_NODE_PARAMS_v2 p{};
  if (Code code = GraphKernelNodeGetParams_v2(hNode, &p); code != Code::kOk) return code;
  std::memcpy(nodeParams, &p, sizeof(*nodeParams));
  return Code::kOk;
}

Code GraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  GraphKernel kernel;
  if (Code code = KernelFromParams(*nodeParams, &kernel); code != Code::kOk) return code;
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_KERNEL, &node); code != Code::kOk) {
    return code;
  }
  node->kernel = std::move(kernel);
  return Code::kOk;
}

Code GraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  const CUDA_KERNEL_NODE_PARAMS_v2 p = FromV1(*nodeParams);
  return GraphKernelNodeSetParams_v2(hNode, &p);
}

// Memcpy nodes: the copy's description, kept as given; checked by the copy paths at launch.
Code GraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  CUctx_st* context = nullptr;
  if (Code code = ContextOrCurrent(ctx, &context); code != Code::kOk) return code;
  if (copyParams->srcMemoryType == CU_MEMORYTYPE_ARRAY ||
      copyParams->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
    return Code::kNotSupported;
  }
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_MEMCPY,
             [&](CUgraphNode_st& node) {
               node.copy = *copyParams;
               node.ctx = context;
               return Code::kOk;
             });
}

Code GraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &node); code != Code::kOk) {
    return code;
  }
  *nodeParams = node->copy;
  return Code::kOk;
}

Code GraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &node); code != Code::kOk) {
    return code;
  }
  node->copy = *nodeParams;
  return Code::kOk;
}

// Memset nodes.
Code GraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams,
                        CUcontext ctx) {
  CUctx_st* context = nullptr;
  if (Code code = ContextOrCurrent(ctx, &context); code != Code::kOk) return code;
  if (Code code = CheckMemset(*memsetParams); code != Code::kOk) return code;
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_MEMSET,
             [&](CUgraphNode_st& node) {
               node.memset = *memsetParams;
               node.ctx = context;
               return Code::kOk;
             });
}

Code GraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_MEMSET, &node); code != Code::kOk) {
    return code;
  }
  *nodeParams = node->memset;
  return Code::kOk;
}

Code GraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  if (Code code = CheckMemset(*nodeParams); code != Code::kOk) return code;
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_MEMSET, &node); code != Code::kOk) {
    return code;
  }
  node->memset = *nodeParams;
  return Code::kOk;
}

// Host nodes.
Code GraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                      size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  if (nodeParams->fn == nullptr) return Code::kInvalidValue;
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_HOST,
             [&](CUgraphNode_st& node) {
               node.host = *nodeParams;
               return Code::kOk;
             });
}

Code GraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_HOST, &node); code != Code::kOk) {
    return code;
  }
  *nodeParams = node->host;
  return Code::kOk;
}

Code GraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  if (nodeParams->fn == nullptr) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_HOST, &node); code != Code::kOk) {
    return code;
  }
  node->host = *nodeParams;
  return Code::kOk;
}

// Child graph nodes hold a copy of the graph given.
Code GraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                            const CUgraphNode* dependencies, size_t numDependencies,
                            CUgraph childGraph) {
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_GRAPH,
             [&](CUgraphNode_st& node) {
               CUgraph_st* child = FindGraph(childGraph);
               if (child == nullptr || child == hGraph) return Code::kInvalidValue;
               node.child = CloneGraph(*child);
               return Code::kOk;
             });
}

Code GraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_GRAPH, &node); code != Code::kOk) {
    return code;
  }
  *phGraph = node->child.get();
  return Code::kOk;
}

Code GraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                       size_t numDependencies) {
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_EMPTY,
             [](CUgraphNode_st&) { return Code::kOk; });
}

// Event record and wait nodes.
Code GraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                             const CUgraphNode* dependencies, size_t numDependencies,
                             CUevent_st* event) {
  Ref<CUevent_st> ref = objects().events.Find(event);
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_EVENT_RECORD,
             [&](CUgraphNode_st& node) {
               node.event = ref;
               return Code::kOk;
             });
}

Code GraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                           const CUgraphNode* dependencies, size_t numDependencies,
                           CUevent_st* event) {
  Ref<CUevent_st> ref = objects().events.Find(event);
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_WAIT_EVENT,
             [&](CUgraphNode_st& node) {
               node.event = ref;
               return Code::kOk;
             });
}

static Code GetEvent(CUgraphNode hNode, CUgraphNodeType type, CUevent* event_out) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, type, &node); code != Code::kOk) return code;
  *event_out = node->event.get();
  return Code::kOk;
}

static Code SetEvent(CUgraphNode hNode, CUgraphNodeType type, CUevent_st* event) {
  Ref<CUevent_st> ref = objects().events.Find(event);
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, type, &node); code != Code::kOk) return code;
  node->event = ref;
  return Code::kOk;
}

Code GraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return GetEvent(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out);
}

Code GraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent_st* event) {
  return SetEvent(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
}

Code GraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  return GetEvent(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out);
}

Code GraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent_st* event) {
  return SetEvent(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
}

// cuGraphAddNode: the node types above, by their parameters in CUgraphNodeParams.
Code GraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                     const CUgraphEdgeData* dependencyData, size_t numDependencies,
                     CUgraphNodeParams* nodeParams) {
  if (Code code = CheckEdgeData(dependencyData, numDependencies); code != Code::kOk) return code;
  CUgraphNodeParams& p = *nodeParams;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS_v2 k{};
      std::memcpy(&k, &p.kernel, sizeof(k));  // v3 has v2's layout
      return GraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return GraphAddMemcpyNode(phGraphNode, hGraph, dependencies, numDependencies,
                                &p.memcpy.copyParams, p.memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS m{};
      std::memcpy(&m, &p.memset, sizeof(m));  // v2 extends v1 with the context
      return GraphAddMemsetNode(phGraphNode, hGraph, dependencies, numDependencies, &m,
                                p.memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      CUDA_HOST_NODE_PARAMS h{p.host.fn, p.host.userData};
      return GraphAddHostNode(phGraphNode, hGraph, dependencies, numDependencies, &h);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
      if (p.graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) return Code::kNotSupported;
      return GraphAddChildGraphNode(phGraphNode, hGraph, dependencies, numDependencies,
                                    p.graph.graph);
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return GraphAddEmptyNode(phGraphNode, hGraph, dependencies, numDependencies);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
      CUevent event =
          p.type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? p.eventRecord.event : p.eventWait.event;
      Ref<CUevent_st> ref;
      if (Code code = ResolveEvent(event, &ref); code != Code::kOk) return code;
      return p.type == CU_GRAPH_NODE_TYPE_EVENT_RECORD
                 ? GraphAddEventRecordNode(phGraphNode, hGraph, dependencies, numDependencies,
                                           ref.get())
                 : GraphAddEventWaitNode(phGraphNode, hGraph, dependencies, numDependencies,
                                         ref.get());
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      CUDA_MEM_ALLOC_NODE_PARAMS m{};
      std::memcpy(&m, &p.alloc, sizeof(m));  // v2 has v1's layout
      Code code = GraphAddMemAllocNode(phGraphNode, hGraph, dependencies, numDependencies, &m);
      if (code == Code::kOk) p.alloc.dptr = m.dptr;
      return code;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return GraphAddMemFreeNode(phGraphNode, hGraph, dependencies, numDependencies,
                                 p.free.dptr);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return AddConditionalNode(phGraphNode, hGraph, dependencies, numDependencies,
                                &p.conditional);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
      CUDA_BATCH_MEM_OP_NODE_PARAMS m{};
      std::memcpy(&m, &p.memOp, sizeof(m));  // v2 has v1's layout
      return GraphAddBatchMemOpNode(phGraphNode, hGraph, dependencies, numDependencies, &m);
    }
    default:
      PVGPU_WARN("cuGraphAddNode: node type " << static_cast<int>(p.type) << " is not supported");
      return Code::kNotSupported;
  }
}

Code GraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                  size_t numDependencies, CUgraphNodeParams* nodeParams) {
  return GraphAddNode_v2(phGraphNode, hGraph, dependencies, nullptr, numDependencies, nodeParams);
}

Code GraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  CUgraphNodeParams& p = *nodeParams;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      CUDA_KERNEL_NODE_PARAMS_v2 k{};
      std::memcpy(&k, &p.kernel, sizeof(k));
      return GraphKernelNodeSetParams_v2(hNode, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return GraphMemcpyNodeSetParams(hNode, &p.memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS m{};
      std::memcpy(&m, &p.memset, sizeof(m));
      return GraphMemsetNodeSetParams(hNode, &m);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
      CUDA_HOST_NODE_PARAMS h{p.host.fn, p.host.userData};
      return GraphHostNodeSetParams(hNode, &h);
    }
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
      CUevent event =
          p.type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? p.eventRecord.event : p.eventWait.event;
      Ref<CUevent_st> ref;
      if (Code code = ResolveEvent(event, &ref); code != Code::kOk) return code;
      return SetEvent(hNode, p.type, ref.get());
    }
    default:
      return Code::kNotSupported;
  }
}

// Batch memory operation nodes: cuStreamBatchMemOp's operations, run in order at each launch
// (writes as copies, waits by the host, as on a stream: api_memops.cc).
Code GraphAddBatchMemOpNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                            const CUgraphNode* dependencies, size_t numDependencies,
                            const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  const CUDA_BATCH_MEM_OP_NODE_PARAMS& p = *nodeParams;
  CUctx_st* ctx = nullptr;
  if (Code code = CheckMemOpNodeParams(p, &ctx); code != Code::kOk) return code;
  return Add(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
             [&](CUgraphNode_st& node) {
               node.ctx = ctx;
               node.memops.assign(p.paramArray, p.paramArray + p.count);
               return Code::kOk;
             });
}

Code GraphBatchMemOpNodeGetParams(CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams_out) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, &node); code != Code::kOk) {
    return code;
  }
  nodeParams_out->ctx = node->ctx;
  nodeParams_out->count = static_cast<unsigned int>(node->memops.size());
  nodeParams_out->paramArray = node->memops.data();  // the node's own, as CUDA's is
  nodeParams_out->flags = 0;
  return Code::kOk;
}

Code GraphBatchMemOpNodeSetParams(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  const CUDA_BATCH_MEM_OP_NODE_PARAMS& p = *nodeParams;
  CUctx_st* ctx = nullptr;
  if (Code code = CheckMemOpNodeParams(p, &ctx); code != Code::kOk) return code;
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, &node); code != Code::kOk) {
    return code;
  }
  node->ctx = ctx;
  node->memops.assign(p.paramArray, p.paramArray + p.count);
  return Code::kOk;
}

// Kernel node attributes: checked and applied as cuLaunchKernelEx applies launch attributes.
Code GraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                 CUkernelNodeAttrValue* value_out) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_KERNEL, &node); code != Code::kOk) {
    return code;
  }
  std::memset(value_out, 0, sizeof(*value_out));  // an attribute never set has its default
  if (attr == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
    value_out->cooperative = node->kernel.cooperative ? 1 : 0;
    return Code::kOk;
  }
  auto it = node->kernel.attributes.find(attr);
  if (it != node->kernel.attributes.end()) *value_out = it->second;
  return Code::kOk;
}

Code GraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr,
                                 const CUkernelNodeAttrValue* value) {
  CUlaunchAttribute launch_attr{};
  launch_attr.id = attr;
  launch_attr.value = *value;
  LaunchOptions options;
  if (Code code = ApplyLaunchAttribute(launch_attr, "cuGraphKernelNodeSetAttribute", &options);
      code != Code::kOk) {
    return code;
  }
  if (!options.events.empty()) return Code::kInvalidValue;  // events are for launches only
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* node = nullptr;
  if (Code code = TypedNode(hNode, CU_GRAPH_NODE_TYPE_KERNEL, &node); code != Code::kOk) {
    return code;
  }
  if (attr == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
    node->kernel.cooperative = options.cooperative;
  } else {
    node->kernel.attributes[attr] = *value;
  }
  return Code::kOk;
}

Code GraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  MutexLock lock(&GraphMutex());
  CUgraphNode_st* to = nullptr;
  CUgraphNode_st* from = nullptr;
  if (Code code = TypedNode(dst, CU_GRAPH_NODE_TYPE_KERNEL, &to); code != Code::kOk) return code;
  if (Code code = TypedNode(src, CU_GRAPH_NODE_TYPE_KERNEL, &from); code != Code::kOk) {
    return code;
  }
  to->kernel.attributes = from->kernel.attributes;
  to->kernel.cooperative = from->kernel.cooperative;
  return Code::kOk;
}

Code GraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags) {
  MutexLock lock(&GraphMutex());
  CUgraph_st* graph = FindGraph(hGraph);
  if (graph == nullptr) return Code::kInvalidValue;
  FILE* out = std::fopen(path, "w");
  if (out == nullptr) return kOperatingSystemError;
  std::fprintf(out, "digraph pvgpu_graph {\n");
  DotGraph(out, *graph, "n");
  std::fprintf(out, "}\n");
  return std::fclose(out) == 0 ? Code::kOk : kOperatingSystemError;
}

// User objects: reference-counted host resources whose lifetime graphs extend.
Code UserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy,
                      unsigned int initialRefcount, unsigned int flags) {
  if (flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC || initialRefcount == 0) {
    return Code::kInvalidValue;
  }
  MutexLock lock(&GraphMutex());
  auto* object = new CUuserObject_st{ptr, destroy, initialRefcount};
  registry().user_objects.insert(object);
  *object_out = object;
  return Code::kOk;
}

Code UserObjectRetain(CUuserObject object, unsigned int count) {
  if (count == 0) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  if (registry().user_objects.count(object) == 0) return Code::kInvalidValue;
  object->refs += count;
  return Code::kOk;
}

Code UserObjectRelease(CUuserObject object, unsigned int count) {
  if (count == 0) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  if (registry().user_objects.count(object) == 0) return Code::kInvalidValue;
  ReleaseUserObject(object, count);
  return Code::kOk;
}

Code GraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count,
                           unsigned int flags) {
  if (count == 0 || (flags & ~CU_GRAPH_USER_OBJECT_MOVE) != 0) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  CUgraph_st* g = FindGraph(graph);
  if (g == nullptr || registry().user_objects.count(object) == 0) return Code::kInvalidValue;
  // MOVE takes the caller's references; otherwise the graph takes new ones.
  if ((flags & CU_GRAPH_USER_OBJECT_MOVE) == 0) object->refs += count;
  g->user_objects[object] += count;
  return Code::kOk;
}

Code GraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  if (count == 0) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  CUgraph_st* g = FindGraph(graph);
  if (g == nullptr || registry().user_objects.count(object) == 0) return Code::kInvalidValue;
  auto it = g->user_objects.find(object);
  if (it == g->user_objects.end() || it->second < count) return Code::kInvalidValue;
  it->second -= count;
  if (it->second == 0) g->user_objects.erase(it);
  ReleaseUserObject(object, count);
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest

CUgraphNode_st::~CUgraphNode_st() = default;

CUgraph_st::~CUgraph_st() {
  // Called with GraphMutex held (DestroyGraph, or a node's child going with its node).
  for (auto& [object, count] : user_objects) pvgpu::guest::DropUserObject(object, count);
}
