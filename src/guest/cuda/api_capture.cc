// Driver API: stream capture (docs/graphs.md). A capturing stream records the stream-ordered
// calls made on it as nodes of a graph instead of running them; other streams join a capture
// by waiting on an event recorded in it. Created streams and the per-thread default stream
// capture; the legacy default stream cannot (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
#include <algorithm>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

std::atomic<int> g_capturing_streams{0};

namespace {

struct Capture {
  uint64_t id = 0;
  CUgraph_st* graph = nullptr;
  bool owns_graph = true;  // false: cuStreamBeginCaptureToGraph's graph, the caller's
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  CUctx_st* ctx = nullptr;
  CUstream_st* origin = nullptr;
  bool invalidated = false;
  std::unordered_set<CUstream_st*> streams;
};

// A capturing stream: its capture and the nodes the next one it records depends on.
struct StreamCapture {
  std::shared_ptr<Capture> capture;
  std::vector<CUgraphNode_st*> deps;
  std::vector<CUgraphEdgeData> edges;  // zeroed, as many as deps (cuStreamGetCaptureInfo_v3)
};

// An event recorded in a capture: where in it (the recording stream's dependencies then).
struct CapturedEvent {
  std::weak_ptr<Capture> capture;
  std::vector<CUgraphNode_st*> deps;
};

std::unordered_map<CUstream_st*, StreamCapture>& Streams() {
  static auto* streams = new std::unordered_map<CUstream_st*, StreamCapture>;
  return *streams;
}

std::unordered_map<CUevent_st*, CapturedEvent>& Events() {
  static auto* events = new std::unordered_map<CUevent_st*, CapturedEvent>;
  return *events;
}

// The thread's stream capture interaction mode (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

// What a capture knows a stream by: its record, or for the per-thread default stream a record
// of the calling thread's own in that context (made on first use and never freed, so that a
// thread ending mid-capture leaves no dangling key). The legacy stream has none: it cannot be
// captured. The per-thread stream is a blocking stream: the legacy stream joins it implicitly.
CUstream_st* Key(const StreamRef& stream) {
  if (stream.object != nullptr) return stream.object.get();
  if (stream.handle != CU_STREAM_PER_THREAD) return nullptr;
  thread_local std::unordered_map<CUctx_st*, CUstream_st*> per_thread;
  CUstream_st*& key = per_thread[stream.ctx];
  if (key == nullptr) {
    key = new CUstream_st;
    key->ctx = stream.ctx;
  }
  return key;
}

StreamCapture* Find(const StreamRef& stream) {
  CUstream_st* key = Key(stream);
  if (key == nullptr) return nullptr;
  auto it = Streams().find(key);
  return it == Streams().end() ? nullptr : &it->second;
}

bool IsLegacy(const StreamRef& stream) {
  return stream.object == nullptr && stream.handle != CU_STREAM_PER_THREAD;
}

void SetDeps(StreamCapture& sc, std::vector<CUgraphNode_st*> deps) {
  sc.deps = std::move(deps);
  sc.edges.assign(sc.deps.size(), CUgraphEdgeData{});
}

void Invalidate(Capture& capture) { capture.invalidated = true; }

// The legacy stream synchronizes with every blocking stream of its context, so using it while
// one of them captures would make the capture depend on work outside it: refused with
// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, which invalidates those captures.
bool ImplicitlyJoins(const StreamRef& stream) {
  bool joins = false;
  for (auto& [s, sc] : Streams()) {
    if (s->ctx == stream.ctx && (s->flags & CU_STREAM_NON_BLOCKING) == 0) {
      Invalidate(*sc.capture);
      joins = true;
    }
  }
  return joins;
}

void Join(CUstream_st* stream, const std::shared_ptr<Capture>& capture,
          std::vector<CUgraphNode_st*> deps) {
  StreamCapture& sc = Streams()[stream];
  sc.capture = capture;
  SetDeps(sc, std::move(deps));
  capture->streams.insert(stream);
  g_capturing_streams.fetch_add(1, std::memory_order_relaxed);
}

// Ends `capture` on all its streams and forgets the events recorded in it.
void EndCapture(const std::shared_ptr<Capture>& capture) {
  for (CUstream_st* s : capture->streams) {
    Streams().erase(s);
    g_capturing_streams.fetch_sub(1, std::memory_order_relaxed);
  }
  capture->streams.clear();
  for (auto it = Events().begin(); it != Events().end();) {
    auto owner = it->second.capture.lock();
    it = owner == nullptr || owner == capture ? Events().erase(it) : std::next(it);
  }
}

// The nodes `roots` depend on, transitively, `roots` included.
std::unordered_set<const CUgraphNode_st*> Ancestors(const std::vector<CUgraphNode_st*>& roots) {
  std::unordered_set<const CUgraphNode_st*> seen;
  std::vector<const CUgraphNode_st*> work(roots.begin(), roots.end());
  while (!work.empty()) {
    const CUgraphNode_st* node = work.back();
    work.pop_back();
    if (!seen.insert(node).second) continue;
    for (const CUgraphNode_st* dep : node->deps) work.push_back(dep);
  }
  return seen;
}

Code Begin(const StreamRef& stream, CUgraph_st* graph, std::vector<CUgraphNode_st*> deps,
           CUstreamCaptureMode mode) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return Code::kInvalidValue;
  }
  if (Key(stream) == nullptr) return kCaptureUnsupported;  // the legacy stream cannot be captured
  if (Find(stream) != nullptr) return Code::kIllegalState;
  auto capture = std::make_shared<Capture>();
  capture->id = NextObjectId();
  capture->owns_graph = graph == nullptr;
  capture->graph = graph != nullptr ? graph : NewGraph();
  capture->mode = mode;
  capture->thread = std::this_thread::get_id();
  capture->ctx = stream.ctx;
  capture->origin = Key(stream);
  Join(Key(stream), capture, std::move(deps));
  return Code::kOk;
}

}  // namespace

std::optional<Code> CaptureNode(const StreamRef& stream, std::unique_ptr<CUgraphNode_st> node) {
  MutexLock lock(&GraphMutex());
  if (IsLegacy(stream)) {
    if (ImplicitlyJoins(stream)) return kCaptureImplicit;
    return std::nullopt;
  }
  StreamCapture* sc = Find(stream);
  if (sc == nullptr) return std::nullopt;
  if (sc->capture->invalidated) return kCaptureInvalidated;
  CUgraphNode_st* added = AddNode(sc->capture->graph, std::move(node), sc->deps);
  SetDeps(*sc, {added});
  return Code::kOk;
}

std::optional<Code> CaptureEventRecord(const StreamRef& stream, CUevent_st* event, bool external) {
  MutexLock lock(&GraphMutex());
  StreamCapture* sc = Find(stream);
  if (sc == nullptr) {
    if (IsLegacy(stream) && ImplicitlyJoins(stream)) return kCaptureImplicit;
    Events().erase(event);  // recorded outside any capture again
    return std::nullopt;
  }
  if (sc->capture->invalidated) return kCaptureInvalidated;
  if (external) {
    auto node = std::make_unique<CUgraphNode_st>();
    node->type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    node->event = objects().events.Find(event);
    CUgraphNode_st* added = AddNode(sc->capture->graph, std::move(node), sc->deps);
    SetDeps(*sc, {added});
  }
  Events()[event] = CapturedEvent{sc->capture, sc->deps};
  return Code::kOk;
}

std::optional<Code> CaptureEventWait(const StreamRef& stream, CUevent_st* event,
                                     unsigned int flags) {
  MutexLock lock(&GraphMutex());
  StreamCapture* sc = Find(stream);
  auto recorded = Events().find(event);
  std::shared_ptr<Capture> source =
      recorded != Events().end() ? recorded->second.capture.lock() : nullptr;
  if (source == nullptr) {
    if (sc == nullptr) {
      if (IsLegacy(stream) && ImplicitlyJoins(stream)) return kCaptureImplicit;
      return std::nullopt;  // an ordinary wait
    }
    if (sc->capture->invalidated) return kCaptureInvalidated;
    if (flags == CU_EVENT_WAIT_EXTERNAL) {  // a wait on work outside the capture, as a node
      auto node = std::make_unique<CUgraphNode_st>();
      node->type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
      node->event = objects().events.Find(event);
      CUgraphNode_st* added = AddNode(sc->capture->graph, std::move(node), sc->deps);
      SetDeps(*sc, {added});
      return Code::kOk;
    }
    Invalidate(*sc->capture);
    return kCaptureIsolation;
  }
  if (sc == nullptr) {
    // A fork: the stream joins the capture, after the event's position in it.
    if (Key(stream) == nullptr) {  // the legacy stream
      Invalidate(*source);
      return kCaptureImplicit;
    }
    if (source->invalidated) return kCaptureInvalidated;
    Join(Key(stream), source, recorded->second.deps);
    return Code::kOk;
  }
  if (sc->capture != source) {
    Invalidate(*sc->capture);
    Invalidate(*source);
    return kCaptureMerge;
  }
  if (sc->capture->invalidated) return kCaptureInvalidated;
  std::vector<CUgraphNode_st*> deps = sc->deps;  // a join: after both positions
  for (CUgraphNode_st* dep : recorded->second.deps) {
    if (std::find(deps.begin(), deps.end(), dep) == deps.end()) deps.push_back(dep);
  }
  SetDeps(*sc, std::move(deps));
  return Code::kOk;
}

Code CheckCaptureWait(const StreamRef& stream) {
  if (!CaptureActive()) return Code::kOk;
  MutexLock lock(&GraphMutex());
  if (IsLegacy(stream)) return ImplicitlyJoins(stream) ? kCaptureImplicit : Code::kOk;
  StreamCapture* sc = Find(stream);
  if (sc == nullptr) return Code::kOk;
  Invalidate(*sc->capture);
  return kCaptureUnsupported;
}

Code CheckUnsafeCall() {
  if (!CaptureActive() || thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return Code::kOk;
  MutexLock lock(&GraphMutex());
  bool refused = false;
  const std::thread::id self = std::this_thread::get_id();
  for (auto& [stream, sc] : Streams()) {
    const Capture& capture = *sc.capture;
    if (capture.mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
    if (capture.thread == self) {
      Invalidate(*sc.capture);
      refused = true;
    } else if (capture.mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
               thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
      refused = true;  // another thread's global capture
    }
  }
  return refused ? kCaptureUnsupported : Code::kOk;
}

void ForgetCapturingStream(CUstream_st* stream) {
  if (!CaptureActive()) return;
  MutexLock lock(&GraphMutex());
  auto it = Streams().find(stream);
  if (it == Streams().end()) return;
  std::shared_ptr<Capture> capture = it->second.capture;
  Invalidate(*capture);
  if (capture->origin == stream) {
    EndCapture(capture);  // nothing can end it any more
    if (capture->owns_graph) DestroyGraph(capture->graph);
    return;
  }
  capture->streams.erase(stream);
  Streams().erase(it);
  g_capturing_streams.fetch_sub(1, std::memory_order_relaxed);
}

bool EventCaptured(CUevent_st* event) {
  if (!CaptureActive()) return false;
  MutexLock lock(&GraphMutex());
  auto it = Events().find(event);
  return it != Events().end() && it->second.capture.lock() != nullptr;
}

namespace api {

Code StreamBeginCapture_v2(const StreamRef& hStream, CUstreamCaptureMode mode) {
  MutexLock lock(&GraphMutex());
  return Begin(hStream, nullptr, {}, mode);
}

Code StreamBeginCapture(const StreamRef& hStream) {
  return StreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

Code StreamBeginCaptureToGraph(const StreamRef& hStream, CUgraph hGraph,
                               const CUgraphNode* dependencies,
                               const CUgraphEdgeData* dependencyData, size_t numDependencies,
                               CUstreamCaptureMode mode) {
  if (numDependencies > 0 && dependencies == nullptr) return Code::kInvalidValue;
  if (dependencyData != nullptr) {
    static const CUgraphEdgeData kDefault{};
    for (size_t i = 0; i < numDependencies; ++i) {
      if (std::memcmp(&dependencyData[i], &kDefault, sizeof(kDefault)) != 0) {
        return Code::kNotSupported;
      }
    }
  }
  MutexLock lock(&GraphMutex());
  if (!LiveGraph(hGraph)) return Code::kInvalidValue;
  std::vector<CUgraphNode_st*> deps;
  for (size_t i = 0; i < numDependencies; ++i) {
    if (dependencies[i] == nullptr || dependencies[i]->graph != hGraph) return Code::kInvalidValue;
    deps.push_back(dependencies[i]);
  }
  return Begin(hStream, hGraph, std::move(deps), mode);
}

Code StreamEndCapture(const StreamRef& hStream, CUgraph* phGraph) {
  MutexLock lock(&GraphMutex());
  StreamCapture* sc = Find(hStream);
  if (sc == nullptr) return Code::kIllegalState;
  std::shared_ptr<Capture> capture = sc->capture;
  if (capture->origin != Key(hStream)) return kCaptureUnmatched;
  if (capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
      capture->thread != std::this_thread::get_id()) {
    return kCaptureWrongThread;
  }
  // Every stream that joined must have been joined back into the origin: its position must be
  // among what the origin's position already follows.
  bool unjoined = false;
  if (!capture->invalidated) {
    const auto joined = Ancestors(sc->deps);
    for (CUstream_st* s : capture->streams) {
      for (const CUgraphNode_st* dep : Streams()[s].deps) unjoined |= joined.count(dep) == 0;
    }
  }
  EndCapture(capture);
  if (capture->invalidated || unjoined) {
    if (capture->owns_graph) DestroyGraph(capture->graph);
    *phGraph = nullptr;
    return unjoined ? kCaptureUnjoined : kCaptureInvalidated;
  }
  *phGraph = capture->graph;
  return Code::kOk;
}

Code StreamIsCapturing(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus) {
  *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!CaptureActive()) return Code::kOk;
  MutexLock lock(&GraphMutex());
  if (IsLegacy(hStream)) {
    for (auto& [s, sc] : Streams()) {
      if (s->ctx == hStream.ctx && (s->flags & CU_STREAM_NON_BLOCKING) == 0) {
        return kCaptureImplicit;
      }
    }
    return Code::kOk;
  }
  if (StreamCapture* sc = Find(hStream)) {
    *captureStatus = sc->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }
  return Code::kOk;
}

// The outputs other than the status are defined only for an active capture; otherwise they
// are cleared, so that a caller reading them anyway sees nothing.
Code StreamGetCaptureInfo_v3(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus_out,
                             cuuint64_t* id_out, CUgraph* graph_out,
                             const CUgraphNode** dependencies_out,
                             const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  if (edgeData_out != nullptr && dependencies_out == nullptr) return Code::kInvalidValue;
  if (Code code = StreamIsCapturing(hStream, captureStatus_out); code != Code::kOk) return code;
  if (id_out != nullptr) *id_out = 0;
  if (graph_out != nullptr) *graph_out = nullptr;
  if (dependencies_out != nullptr) *dependencies_out = nullptr;
  if (edgeData_out != nullptr) *edgeData_out = nullptr;
  if (numDependencies_out != nullptr) *numDependencies_out = 0;
  if (*captureStatus_out == CU_STREAM_CAPTURE_STATUS_NONE) return Code::kOk;
  MutexLock lock(&GraphMutex());
  StreamCapture* sc = Find(hStream);
  if (sc == nullptr) return Code::kOk;
  if (id_out != nullptr) *id_out = sc->capture->id;
  if (*captureStatus_out != CU_STREAM_CAPTURE_STATUS_ACTIVE) return Code::kOk;
  if (graph_out != nullptr) *graph_out = sc->capture->graph;
  if (dependencies_out != nullptr) *dependencies_out = sc->deps.data();
  if (edgeData_out != nullptr) *edgeData_out = sc->edges.data();
  if (numDependencies_out != nullptr) *numDependencies_out = sc->deps.size();
  return Code::kOk;
}

Code StreamGetCaptureInfo_v2(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus_out,
                             cuuint64_t* id_out, CUgraph* graph_out,
                             const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  return StreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                                 nullptr, numDependencies_out);
}

Code StreamGetCaptureInfo(const StreamRef& hStream, CUstreamCaptureStatus* captureStatus_out,
                          cuuint64_t* id_out) {
  return StreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr,
                                 nullptr);
}

Code StreamUpdateCaptureDependencies_v2(const StreamRef& hStream, CUgraphNode* dependencies,
                                        const CUgraphEdgeData* dependencyData,
                                        size_t numDependencies, unsigned int flags) {
  if (flags != 0 && flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
      flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    return Code::kInvalidValue;
  }
  if (numDependencies > 0 && dependencies == nullptr) return Code::kInvalidValue;
  MutexLock lock(&GraphMutex());
  StreamCapture* sc = Find(hStream);
  if (sc == nullptr) return Code::kIllegalState;
  if (sc->capture->invalidated) return kCaptureInvalidated;
  std::vector<CUgraphNode_st*> deps;
  if (flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES) deps = sc->deps;
  for (size_t i = 0; i < numDependencies; ++i) {
    CUgraphNode_st* node = dependencies[i];
    bool in_graph = false;
    for (const auto& n : sc->capture->graph->nodes) in_graph |= n.get() == node;
    if (!in_graph) return Code::kInvalidValue;
    if (std::find(deps.begin(), deps.end(), node) == deps.end()) deps.push_back(node);
  }
  (void)dependencyData;  // edge data: only the default is kept
  SetDeps(*sc, std::move(deps));
  return Code::kOk;
}

Code StreamUpdateCaptureDependencies(const StreamRef& hStream, CUgraphNode* dependencies,
                                     size_t numDependencies, unsigned int flags) {
  return StreamUpdateCaptureDependencies_v2(hStream, dependencies, nullptr, numDependencies, flags);
}

// The mode says which calls a capture in progress forbids this thread (CheckUnsafeCall).
Code ThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return Code::kInvalidValue;
  }
  std::swap(*mode, thread_mode);
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
