// `pvgpu bench graph`: a graph of 1, 10 and 100 empty kernels launched through the channel
// (one GraphExecLaunch message: the host keeps the graph, docs/graphs.md), against the same
// kernels launched one by one through the channel (pipelined: one message each, no waiting)
// and against the kernels launched on the adapter in this process. Each figure is per
// iteration (all N kernels), the best of the rounds; "+ sync" figures wait for every
// iteration, which is what a training step that reads its result back pays.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "tools/bench/bench.h"
#include "tools/bench/guest_device.h"
#include "tools/bench/host_session.h"
#include "tools/bench/inprocess_device.h"
#include "tools/bench/kernels.h"
#include "tools/bench/report.h"

namespace pvgpu::tools::bench {
namespace {

constexpr int kSizes[] = {1, 10, 100};

// The graph entry points, which DriverApi does not carry: resolved from the same library.
struct GraphApi {
  CUresult (*cuGraphCreate)(CUgraph*, unsigned int) = nullptr;
  CUresult (*cuGraphAddKernelNode_v2)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                      const CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
};

StatusOr<GraphApi> LoadGraphApi(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) return Error(Code::kNotFound, library + " is not loaded");
  GraphApi api;
  auto resolve = [&](auto** slot, const char* name) -> Status {
    *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(dlsym(handle, name));
    return *slot != nullptr ? Status::Ok() : Error(Code::kNotFound, std::string(name) + " missing");
  };
  PVGPU_TRY(resolve(&api.cuGraphCreate, "cuGraphCreate"));
  PVGPU_TRY(resolve(&api.cuGraphAddKernelNode_v2, "cuGraphAddKernelNode_v2"));
  PVGPU_TRY(resolve(&api.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"));
  PVGPU_TRY(resolve(&api.cuGraphLaunch, "cuGraphLaunch"));
  PVGPU_TRY(resolve(&api.cuGraphExecDestroy, "cuGraphExecDestroy"));
  PVGPU_TRY(resolve(&api.cuGraphDestroy, "cuGraphDestroy"));
  return api;
}

struct Figures {
  double inprocess = INFINITY;
  double launches = INFINITY;       // one by one, pipelined
  double graph = INFINITY;          // one graph launch, pipelined
  double launches_sync = INFINITY;  // one by one, then synchronize, every iteration
  double graph_sync = INFINITY;
};

// Microseconds per iteration of `body` run `iterations` times, then `settle` (timed).
StatusOr<double> PerIteration(int iterations, const std::function<Status()>& body,
                              const std::function<Status()>& settle) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iterations; ++i) PVGPU_TRY(body());
  PVGPU_TRY(settle());
  return SecondsSince(start) * 1e6 / iterations;
}

}  // namespace

StatusOr<BenchReport> RunGraph(const BenchOptions& options) {
  const int rounds = options.quick ? 1 : 5;
  const int work = options.quick ? 200 : 5000;  // kernels per measurement
  PVGPU_ASSIGN_OR_RETURN(auto host, HostSession::Start(options));
  Progress progress("graph");
  progress.Step("starting");
  PVGPU_ASSIGN_OR_RETURN(auto inprocess, InprocessDevice::Open());
  PVGPU_ASSIGN_OR_RETURN(uint32_t empty_index, inprocess->KernelIndex(kEmptyKernel));
  PVGPU_ASSIGN_OR_RETURN(auto channel, GuestDevice::Open(host->guest_library()));
  PVGPU_ASSIGN_OR_RETURN(GraphApi graph_api, LoadGraphApi(host->guest_library()));
  const DriverApi& api = channel->api();
  PVGPU_ASSIGN_OR_RETURN(CUfunction empty, channel->Function(kEmptyKernel));
  const std::vector<uint8_t> no_params;

  auto sync = [&] { return api.Check(api.cuCtxSynchronize(), "cuCtxSynchronize"); };
  auto launch = [&] {
    return api.Check(api.cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
                     "cuLaunchKernel");
  };
  std::vector<Figures> figures(std::size(kSizes));
  std::vector<CUgraphExec> execs;
  std::vector<CUgraph> graphs;
  for (int nodes : kSizes) {
    CUgraph graph = nullptr;
    PVGPU_TRY(api.Check(graph_api.cuGraphCreate(&graph, 0), "cuGraphCreate"));
    CUgraphNode previous = nullptr;
    for (int i = 0; i < nodes; ++i) {
      CUDA_KERNEL_NODE_PARAMS p{};
      p.func = empty;
      p.gridDimX = p.gridDimY = p.gridDimZ = 1;
      p.blockDimX = 32;
      p.blockDimY = p.blockDimZ = 1;
      CUgraphNode node = nullptr;
      PVGPU_TRY(api.Check(graph_api.cuGraphAddKernelNode_v2(&node, graph, &previous,
                                                            previous != nullptr ? 1 : 0, &p),
                          "cuGraphAddKernelNode"));
      previous = node;
    }
    CUgraphExec exec = nullptr;
    PVGPU_TRY(
        api.Check(graph_api.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate"));
    graphs.push_back(graph);
    execs.push_back(exec);
  }
  for (int r = 0; r < rounds; ++r) {
    progress.Step("round " + std::to_string(r + 1) + " of " + std::to_string(rounds));
    for (size_t s = 0; s < std::size(kSizes); ++s) {
      const int nodes = kSizes[s];
      const int iterations = std::max(10, work / nodes);
      Figures& f = figures[s];
      auto n_launches = [&]() -> Status {
        for (int i = 0; i < nodes; ++i) PVGPU_TRY(launch());
        return Status::Ok();
      };
      auto graph_launch = [&] {
        return api.Check(graph_api.cuGraphLaunch(execs[s], nullptr), "cuGraphLaunch");
      };
      auto in_process = [&]() -> Status {
        for (int i = 0; i < nodes; ++i) {
          PVGPU_TRY(inprocess->LaunchPrepared(empty_index, {1}, {32}, no_params));
        }
        return Status::Ok();
      };
      auto none = [] { return Status::Ok(); };
      auto both = [&](const std::function<Status()>& a) {
        return [&, a]() -> Status {
          PVGPU_TRY(a());
          return sync();
        };
      };
      PVGPU_ASSIGN_OR_RETURN(double t, PerIteration(iterations, in_process, none));
      f.inprocess = std::min(f.inprocess, t);
      PVGPU_ASSIGN_OR_RETURN(t, PerIteration(iterations, n_launches, sync));
      f.launches = std::min(f.launches, t);
      PVGPU_ASSIGN_OR_RETURN(t, PerIteration(iterations, graph_launch, sync));
      f.graph = std::min(f.graph, t);
      const int synced = std::max(10, iterations / 10);
      PVGPU_ASSIGN_OR_RETURN(t, PerIteration(synced, both(n_launches), none));
      f.launches_sync = std::min(f.launches_sync, t);
      PVGPU_ASSIGN_OR_RETURN(t, PerIteration(synced, both(graph_launch), none));
      f.graph_sync = std::min(f.graph_sync, t);
    }
  }
  for (size_t s = 0; s < execs.size(); ++s) {
    (void)graph_api.cuGraphExecDestroy(execs[s]);
    (void)graph_api.cuGraphDestroy(graphs[s]);
  }
  channel.reset();
  host->Stop();

  BenchReport report;
  report.json = nlohmann::ordered_json{{"benchmark", "graph"},
                                       {"machine", MachineJson()},
                                       {"rounds", rounds},
                                       {"unit", "microseconds per iteration"}};
  TextTable table({"kernels", "in-process", "one by one", "graph", "ratio", "one by one + sync",
                   "graph + sync", "ratio"});
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  for (size_t s = 0; s < std::size(kSizes); ++s) {
    const Figures& f = figures[s];
    sizes.push_back({{"kernels", kSizes[s]},
                     {"inprocess_us", f.inprocess},
                     {"launches_pipelined_us", f.launches},
                     {"graph_pipelined_us", f.graph},
                     {"launches_sync_us", f.launches_sync},
                     {"graph_sync_us", f.graph_sync}});
    table.AddRow({std::to_string(kSizes[s]), FormatNumber(f.inprocess), FormatNumber(f.launches),
                  FormatNumber(f.graph), FormatRatio(f.launches / f.graph),
                  FormatNumber(f.launches_sync), FormatNumber(f.graph_sync),
                  FormatRatio(f.launches_sync / f.graph_sync)});
  }
  report.json["sizes"] = sizes;
  report.table =
      "pvgpu bench graph: N empty kernels per iteration, microseconds per iteration (best of " +
      std::to_string(rounds) + " rounds)\n" + table.Render() +
      "one by one: N cuLaunchKernel calls (N messages, pipelined); graph: one cuGraphLaunch of\n"
      "an instantiated graph of N kernel nodes (one message); + sync: cuCtxSynchronize after\n"
      "every iteration. ratio: one by one / graph.\n";
  return report;
}

}  // namespace pvgpu::tools::bench
