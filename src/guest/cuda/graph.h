// CUDA graphs and stream capture in the guest (docs/graphs.md): the records behind CUgraph,
// CUgraphNode, CUgraphExec and CUuserObject, and what the stream-ordered calls ask of capture.
//
// A graph is built entirely in the guest. Instantiation orders its nodes by their dependencies
// (child graphs inline), sends the device work (kernels, copies and memsets within device
// memory, event records) to the host as the messages it would be on its own, in
// GraphExecCreate, and keeps the rest (host functions, copies from or to host memory, waits on
// another host's events) as steps the guest runs itself at launch, between the host's pieces,
// on the launch's stream. A launch is then one GraphExecLaunch per piece of device work.
//
// Locking: graph objects are not internally synchronized in CUDA either; the guest still keeps
// every graph, node, executable graph, user object and capture under one lock (GraphMutex), so
// that a forged handle is looked up, never dereferenced, and threads capturing into one graph
// do not race. It is a leaf lock except across the host round trips of instantiation.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "guest/cuda/objects.h"

struct CUgraph_st;

// A kernel as a node launches it: the function, its launch shape and its packed parameters
// (checked and packed as cuLaunchKernel packs them).
struct GraphKernel {
  std::shared_ptr<CUfunc_st> function;
  unsigned int grid[3] = {1, 1, 1};
  unsigned int block[3] = {1, 1, 1};
  unsigned int shared_bytes = 0;
  bool cooperative = false;
  std::vector<uint8_t> params;
  std::vector<void*> param_pointers;  // into params, for cuGraphKernelNodeGetParams
  // cuGraphKernelNodeSetAttribute's values but cooperative (above), each one ApplyLaunchAttribute
  // accepted.
  std::map<int, CUlaunchAttributeValue> attributes;
};

// Memory a graph's allocation node owns (api_graph_memory.cc): allocated when the node is made
// (or captured), at the address the node reports for the graph's whole life, and freed when
// the last graph, clone or executable graph holding the node goes.
struct GraphAllocation {
  GraphAllocation() = default;
  ~GraphAllocation();
  GraphAllocation(const GraphAllocation&) = delete;
  GraphAllocation& operator=(const GraphAllocation&) = delete;

  CUctx_st* ctx = nullptr;
  CUdeviceptr dptr = 0;
  size_t size = 0;
  CUmemPoolProps pool{};
  std::vector<CUmemAccessDesc> access;
};

// The value of a conditional node (api_graph_conditional.cc): 4 bytes of device memory of its
// context, whose address is the CUgraphConditionalHandle, which kernels set through
// cudaGraphSetConditional. It lives as long as a graph (or a copy) that made it.
struct ConditionalCell {
  ConditionalCell() = default;
  ~ConditionalCell();
  ConditionalCell(const ConditionalCell&) = delete;
  ConditionalCell& operator=(const ConditionalCell&) = delete;

  CUctx_st* ctx = nullptr;
  CUdeviceptr dptr = 0;
  unsigned int default_value = 0;
  bool assign_default = false;  // CU_GRAPH_COND_ASSIGN_DEFAULT: reset at every launch
};

struct CUgraphNode_st {
  CUgraphNode_st() = default;
  ~CUgraphNode_st();
  CUgraphNode_st(const CUgraphNode_st&) = delete;
  CUgraphNode_st& operator=(const CUgraphNode_st&) = delete;

  CUgraph_st* graph = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::vector<CUgraphNode_st*> deps;        // in the order they were added
  std::vector<CUgraphNode_st*> dependents;  // likewise
  // The node this one was cloned from (cuGraphNodeFindInClone; an executable graph's nodes
  // name the nodes of the graph it was instantiated from).
  const CUgraphNode_st* origin = nullptr;

  GraphKernel kernel;                 // CU_GRAPH_NODE_TYPE_KERNEL
  CUDA_MEMCPY3D copy{};               // CU_GRAPH_NODE_TYPE_MEMCPY
  CUDA_MEMSET_NODE_PARAMS memset{};   // CU_GRAPH_NODE_TYPE_MEMSET
  CUctx_st* ctx = nullptr;            // the context a memcpy or memset node runs in
  CUDA_HOST_NODE_PARAMS host{};       // CU_GRAPH_NODE_TYPE_HOST
  std::shared_ptr<CUevent_st> event;  // CU_GRAPH_NODE_TYPE_EVENT_RECORD, _WAIT_EVENT
  std::unique_ptr<CUgraph_st> child;  // CU_GRAPH_NODE_TYPE_GRAPH: its own copy
  std::shared_ptr<GraphAllocation> allocation;  // CU_GRAPH_NODE_TYPE_MEM_ALLOC
  std::vector<CUstreamBatchMemOpParams> memops;  // CU_GRAPH_NODE_TYPE_BATCH_MEM_OP (and ctx)
  CUdeviceptr freed = 0;                        // CU_GRAPH_NODE_TYPE_MEM_FREE
  // CU_GRAPH_NODE_TYPE_CONDITIONAL: the parameters (phGraph_out pointing at body_handles) and
  // the body graphs, which the node owns.
  CUDA_CONDITIONAL_NODE_PARAMS conditional{};
  std::vector<std::unique_ptr<CUgraph_st>> bodies;
  std::vector<CUgraph> body_handles;
  // cuGraphNodeSetEnabled, on an executable graph's kernel, memcpy and memset nodes: a
  // disabled node runs as an empty one.
  bool enabled = true;
};

struct CUuserObject_st {
  void* ptr = nullptr;
  CUhostFn destroy = nullptr;
  unsigned int refs = 0;  // under GraphMutex
};

struct CUgraph_st {
  CUgraph_st() = default;
  ~CUgraph_st();  // drops the graph's references to user objects
  CUgraph_st(const CUgraph_st&) = delete;
  CUgraph_st& operator=(const CUgraph_st&) = delete;

  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;     // in creation order
  std::map<CUuserObject_st*, unsigned int> user_objects;  // references the graph holds
  CUgraphNode_st* parent = nullptr;                       // the node owning a child graph
  std::vector<std::shared_ptr<ConditionalCell>> conditionals;  // handles made for this graph
};

// What an executable graph runs, in order: pieces of device work kept by the host, and the
// nodes the guest runs itself.
struct GraphStep {
  bool on_host = false;
  std::vector<uint64_t> pieces;                      // on_host: GraphExec handles on the host
  std::vector<std::shared_ptr<CUevent_st>> records;  // on_host: the events its entries record
  const CUgraphNode_st* node = nullptr;              // !on_host: run by the guest
};

struct CUgraphExec_st {
  CUgraphExec_st() = default;
  ~CUgraphExec_st();  // destroys the bodies' executable graphs
  CUgraphExec_st(const CUgraphExec_st&) = delete;
  CUgraphExec_st& operator=(const CUgraphExec_st&) = delete;

  std::unique_ptr<CUgraph_st> graph;  // a private copy; its nodes' origins are the user's
  unsigned long long flags = 0;
  CUctx_st* ctx = nullptr;  // the context of the device work (null: none)
  uint64_t ctx_handle = 0;  // its host handle when the pieces were made
  std::vector<GraphStep> steps;
  std::vector<std::shared_ptr<CUfunc_st>> functions;  // what the pieces name, to check at launch
  std::vector<std::shared_ptr<CUevent_st>> events;
  // Each conditional node's bodies, instantiated with it (the node: one of graph's copies).
  std::map<const CUgraphNode_st*, std::vector<std::unique_ptr<CUgraphExec_st>>> bodies;
};

namespace pvgpu::guest {

// The CUDA results of graphs and capture that pvgpu::Code does not name.
constexpr Code kOperatingSystemError = static_cast<Code>(CUDA_ERROR_OPERATING_SYSTEM);
constexpr Code kCaptureUnsupported = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
constexpr Code kCaptureInvalidated = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
constexpr Code kCaptureMerge = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_MERGE);
constexpr Code kCaptureUnmatched = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
constexpr Code kCaptureUnjoined = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
constexpr Code kCaptureIsolation = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
constexpr Code kCaptureImplicit = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
constexpr Code kCapturedEvent = static_cast<Code>(CUDA_ERROR_CAPTURED_EVENT);
constexpr Code kCaptureWrongThread = static_cast<Code>(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
constexpr Code kGraphExecUpdateFailure = static_cast<Code>(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);

Mutex& GraphMutex();

// Graph building blocks shared by the graph calls and capture (api_graph.cc), GraphMutex held.
// A new empty graph, known to the handle checks.
CUgraph_st* NewGraph();
// Adds `node` to `graph` after `deps` (nodes of that graph, checked by the caller).
CUgraphNode_st* AddNode(CUgraph_st* graph, std::unique_ptr<CUgraphNode_st> node,
                        const std::vector<CUgraphNode_st*>& deps);
// cuGraphAdd*Node's shape: a node of `type` that `fill` completes, after the named
// dependencies (INVALID_VALUE for an unknown graph or dependency). Takes GraphMutex.
Code AddGraphNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t count,
                  CUgraphNodeType type, const std::function<Code(CUgraphNode_st&)>& fill);
// A batch memory operation node's parameters, checked as cuGraphAddBatchMemOpNode checks them;
// *ctx: their context (the given one, else the current one).
Code CheckMemOpNodeParams(const CUDA_BATCH_MEM_OP_NODE_PARAMS& params, CUctx_st** ctx);
// A new empty body graph of conditional node `node`, owned by it (GraphMutex held).
CUgraph_st* AddBody(CUgraphNode_st& node);
// cuGraphAddNode of a conditional node (api_graph_conditional.cc).
Code AddConditionalNode(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t count,
                        CUDA_CONDITIONAL_NODE_PARAMS* params);
// The node behind `handle` when it has `type` (else INVALID_VALUE), GraphMutex held.
Code FindTypedNode(CUgraphNode handle, CUgraphNodeType type, CUgraphNode_st** node);
// Destroys a graph made by NewGraph (or a capture) with its nodes.
void DestroyGraph(CUgraph_st* graph);
// A deep copy of `graph`; each copied node's origin is its original.
std::unique_ptr<CUgraph_st> CloneGraph(const CUgraph_st& graph);
bool LiveGraph(const CUgraph_st* graph);
// Gives back `count` references to a user object; the last runs its destructor.
void DropUserObject(CUuserObject_st* object, unsigned int count);

// Kernel node parameters from a launch's arguments: checked and packed as cuLaunchKernel
// does (PrepareLaunch, launch.h).
Code MakeKernel(CUfunc_st* f, const unsigned int grid[3], const unsigned int block[3],
                unsigned int shared_bytes, void** kernelParams, void** extra, bool cooperative,
                GraphKernel* kernel);

// Graph memory (api_graph_memory.cc). Allocates the memory of an allocation node as `params`
// describe it (checked as cuGraphAddMemAllocNode does), in the current context.
Code MakeGraphAllocation(const CUDA_MEM_ALLOC_NODE_PARAMS& params,
                         std::shared_ptr<GraphAllocation>* out);
// Whether `dptr` is the start of memory an allocation node owns.
bool IsGraphAllocation(CUdeviceptr dptr);
// cuMemFree or cuMemFreeAsync outside a graph of memory a graph owns: true, with the result in
// *code (the memory stays with its graph, which hands it out again at its next launch, as
// CUDA does); false when `dptr` is not such memory.
bool FreeGraphAllocation(CUdeviceptr dptr, Code* code);

// Stream memory operations as graph nodes (api_memops.cc): checks a batch as cuStreamBatchMemOp
// does, for a node of `ctx` (waits on the context's own memory only).
Code CheckMemOps(CUctx_st* ctx, const CUstreamBatchMemOpParams* ops, unsigned int count);

// Stream capture (api_capture.cc). Whether any stream in the process is capturing: the only
// cost stream-ordered calls pay when none is (one relaxed load).
extern std::atomic<int> g_capturing_streams;
inline bool CaptureActive() { return g_capturing_streams.load(std::memory_order_relaxed) != 0; }

// Stream-ordered work on `stream` (call only when CaptureActive()): nothing when the work runs
// as usual; otherwise the call's result, with `node` recorded in the stream's capture (kOk) or
// the error capture gives (an invalidated capture, the legacy stream while a blocking stream
// of its context captures: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT).
std::optional<Code> CaptureNode(const StreamRef& stream, std::unique_ptr<CUgraphNode_st> node);
// cuEventRecord on a capturing stream: the event then stands for the stream's capture position
// (forks and joins of other streams); `external` also records it as a node.
std::optional<Code> CaptureEventRecord(const StreamRef& stream, CUevent_st* event, bool external);
// cuStreamWaitEvent: joins or forks captures through captured events.
std::optional<Code> CaptureEventWait(const StreamRef& stream, CUevent_st* event,
                                     unsigned int flags);
// A call that waits for `stream` (synchronize, query): refused on a capturing stream (which it
// invalidates), and on the legacy stream while a blocking stream of its context captures.
Code CheckCaptureWait(const StreamRef& stream);
// A call CUDA calls potentially unsafe during capture (allocation, release, context
// synchronization): refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED as the calling thread's
// capture mode says, invalidating the calling thread's captures.
Code CheckUnsafeCall();
// An event last recorded into a capture: queries and waits on it are refused
// (CUDA_ERROR_CAPTURED_EVENT).
bool EventCaptured(CUevent_st* event);
// A stream being destroyed: its capture is invalidated (and ended, when it began there).
void ForgetCapturingStream(CUstream_st* stream);

}  // namespace pvgpu::guest
