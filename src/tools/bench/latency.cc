// `pvgpu bench latency`: what one small operation costs in-process, through the channel, and
// through the channel with PVGPU_PIPELINE=0 (every call waits for the host, as the original
// GPU-PV did). Each figure is the best of a few rounds, since a shared machine adds noise only
// upwards.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <functional>

#include "tools/bench/bench.h"
#include "tools/bench/device.h"
#include "tools/bench/guest_device.h"
#include "tools/bench/host_session.h"
#include "tools/bench/inprocess_device.h"
#include "tools/bench/kernels.h"
#include "tools/bench/latency_report.h"
#include "tools/bench/report.h"

namespace pvgpu::tools::bench {
namespace {

struct Counts {
  int launches, syncs, queries, copies, rounds;
};

Counts CountsFor(bool quick) {
  if (quick) return Counts{200, 40, 1000, 40, 1};
  return Counts{5000, 1000, 100000, 1000, 3};
}

// Context switches of the calling thread so far (voluntary and not).
long ThreadSwitches() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

// Microseconds per call of `body` run `count` times, best of `rounds`. `body` returns a Status
// for its whole batch so that failures stop the benchmark instead of being timed. `switches`,
// when given, receives the calling thread's context switches per call over all rounds.
StatusOr<double> BestMicros(int rounds, int count, const std::function<Status(int)>& body,
                            double* switches = nullptr) {
  double best = INFINITY;
  const long switches_before = ThreadSwitches();
  for (int r = 0; r < rounds; ++r) {
    const Clock::time_point start = Clock::now();
    PVGPU_TRY(body(count));
    best = std::min(best, SecondsSince(start) * 1e6 / count);
  }
  if (switches != nullptr) {
    *switches = static_cast<double>(ThreadSwitches() - switches_before) / (rounds * count);
  }
  return best;
}

// Microseconds the calling thread spends in `call` alone, best of `rounds` of `count` calls:
// the calls run in bursts of `burst`, each followed by `settle`, which is not timed.
StatusOr<double> BestBurstMicros(int rounds, int count, int burst,
                                 const std::function<Status()>& call,
                                 const std::function<Status()>& settle) {
  double best = INFINITY;
  for (int r = 0; r < rounds; ++r) {
    double seconds = 0;
    for (int done = 0; done < count;) {
      const int n = std::min(burst, count - done);
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < n; ++i) PVGPU_TRY(call());
      seconds += SecondsSince(start);
      PVGPU_TRY(settle());
      done += n;
    }
    best = std::min(best, seconds * 1e6 / count);
  }
  return best;
}

// Launches per burst for `launch_call`: their messages (about 150 bytes each) fit in any ring
// many times over, so a pipelined call never waits for room.
constexpr int kLaunchBurst = 100;

// 4-byte HtoD copies, each batch ended by `settle_htod` (so that a channel figure includes
// the delivery), then 4-byte DtoH copies, between `*value` and the device word `word`.
Status MeasureSmallCopies(const Counts& counts, Device& device, uint64_t word,
                          const std::function<Status()>& settle_htod, uint32_t* value,
                          LatencyFigures* out) {
  PVGPU_ASSIGN_OR_RETURN(out->copy_htod, BestMicros(
                                             counts.rounds, counts.copies,
                                             [&](int count) {
                                               for (int i = 0; i < count; ++i)
                                                 PVGPU_TRY(device.Upload(word, value, 4));
                                               return settle_htod();
                                             },
                                             &out->switches.copy_htod));
  PVGPU_ASSIGN_OR_RETURN(out->copy_dtoh, BestMicros(
                                             counts.rounds, counts.copies,
                                             [&](int count) {
                                               for (int i = 0; i < count; ++i)
                                                 PVGPU_TRY(device.Download(value, word, 4));
                                               return Status::Ok();
                                             },
                                             &out->switches.copy_dtoh));
  return Status::Ok();
}

StatusOr<LatencyFigures> MeasureInprocess(const Counts& counts, Progress& progress) {
  progress.Step("in-process");
  PVGPU_ASSIGN_OR_RETURN(auto device, InprocessDevice::Open());
  PVGPU_ASSIGN_OR_RETURN(uint32_t empty, device->KernelIndex(kEmptyKernel));
  PVGPU_ASSIGN_OR_RETURN(uint64_t word, device->Allocate(4));
  const std::vector<uint8_t> no_params;
  auto launches = [&](int count) -> Status {
    for (int i = 0; i < count; ++i) {
      PVGPU_TRY(device->LaunchPrepared(empty, {1}, {32}, no_params));
    }
    return Status::Ok();
  };
  PVGPU_TRY(launches(10));  // warms caches and the executor's per-thread buffers
  LatencyFigures out;
  PVGPU_ASSIGN_OR_RETURN(out.launch_async, BestMicros(counts.rounds, counts.launches, launches,
                                                      &out.switches.launch_async));
  // An adapter launch returns when the kernel is done: launch and launch+sync are one thing,
  // and the call's own cost is the whole launch.
  PVGPU_ASSIGN_OR_RETURN(out.launch_call,
                         BestBurstMicros(
                             counts.rounds, counts.launches, kLaunchBurst,
                             [&] { return device->LaunchPrepared(empty, {1}, {32}, no_params); },
                             [] { return Status::Ok(); }));
  PVGPU_ASSIGN_OR_RETURN(out.launch_sync, BestMicros(counts.rounds, counts.syncs, launches,
                                                     &out.switches.launch_sync));
  // Natively, asking whether finished work is finished is one read of a completion counter.
  std::atomic<uint64_t> fence{1};
  auto queries = [&](int count) -> Status {
    uint64_t done = 0;
    for (int i = 0; i < count; ++i) done += fence.load(std::memory_order_acquire) >= 1;
    return done == static_cast<uint64_t>(count) ? Status::Ok()
                                                : Error(Code::kUnknown, "fence went back");
  };
  PVGPU_ASSIGN_OR_RETURN(out.stream_query, BestMicros(counts.rounds, counts.queries, queries));
  out.event_query = out.stream_query;
  uint32_t value = 42;
  PVGPU_TRY(MeasureSmallCopies(
      counts, *device, word, [] { return Status::Ok(); }, &value, &out));
  return out;
}

StatusOr<LatencyFigures> MeasureChannel(const Counts& counts, const std::string& library) {
  PVGPU_ASSIGN_OR_RETURN(auto device, GuestDevice::Open(library));
  const DriverApi& api = device->api();
  PVGPU_ASSIGN_OR_RETURN(CUfunction empty, device->Function(kEmptyKernel));
  PVGPU_ASSIGN_OR_RETURN(uint64_t word, device->Allocate(4));
  auto launch = [&]() {
    return api.Check(api.cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
                     "cuLaunchKernel");
  };
  auto sync = [&]() { return api.Check(api.cuCtxSynchronize(), "cuCtxSynchronize"); };
  // Many launches, then one synchronize: the pipelined pattern of a real application.
  auto async_launches = [&](int count) -> Status {
    for (int i = 0; i < count; ++i) PVGPU_TRY(launch());
    return sync();
  };
  auto sync_launches = [&](int count) -> Status {
    for (int i = 0; i < count; ++i) {
      PVGPU_TRY(launch());
      PVGPU_TRY(sync());
    }
    return Status::Ok();
  };
  PVGPU_TRY(async_launches(10));  // wakes the host's session thread, warms its buffers
  LatencyFigures out;
  PVGPU_ASSIGN_OR_RETURN(out.launch_async, BestMicros(counts.rounds, counts.launches,
                                                      async_launches, &out.switches.launch_async));
  PVGPU_ASSIGN_OR_RETURN(out.launch_sync, BestMicros(counts.rounds, counts.syncs, sync_launches,
                                                     &out.switches.launch_sync));
  // What cuLaunchKernel keeps the application's thread when the ring has room: the host runs
  // each burst while it is being submitted, and the synchronize after it is not timed.
  PVGPU_ASSIGN_OR_RETURN(
      out.launch_call, BestBurstMicros(counts.rounds, counts.launches, kLaunchBurst, launch, sync));

  // Queries of completed work: all the work above is finished, so both must say so.
  CUevent event = nullptr;
  PVGPU_TRY(api.Check(api.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
  PVGPU_TRY(api.Check(api.cuEventRecord(event, nullptr), "cuEventRecord"));
  PVGPU_TRY(sync());
  auto query_loop = [&](const std::function<CUresult()>& query, const char* what) {
    return [&, query, what](int count) -> Status {
      for (int i = 0; i < count; ++i) PVGPU_TRY(api.Check(query(), what));
      return Status::Ok();
    };
  };
  PVGPU_ASSIGN_OR_RETURN(
      out.stream_query,
      BestMicros(counts.rounds, counts.queries,
                 query_loop([&] { return api.cuStreamQuery(nullptr); }, "cuStreamQuery")));
  PVGPU_ASSIGN_OR_RETURN(
      out.event_query,
      BestMicros(counts.rounds, counts.queries,
                 query_loop([&] { return api.cuEventQuery(event); }, "cuEventQuery")));
  (void)api.cuEventDestroy_v2(event);

  uint32_t value = 42;
  // A synchronous HtoD copy may return before the host has the bytes (CUDA allows it for
  // pageable memory); the final synchronize makes the figure include the delivery.
  PVGPU_TRY(MeasureSmallCopies(counts, *device, word, sync, &value, &out));
  if (value != 42) return Error(Code::kUnknown, "4-byte round trip returned the wrong value");
  return out;
}

}  // namespace

StatusOr<BenchReport> RunLatency(const BenchOptions& options) {
  const Counts counts = CountsFor(options.quick);
  PVGPU_ASSIGN_OR_RETURN(auto host, HostSession::Start(options));
  if (options.channel_only) {
    // The child half: PVGPU_PIPELINE is already in this process's environment.
    PVGPU_ASSIGN_OR_RETURN(LatencyFigures figures, MeasureChannel(counts, host->guest_library()));
    BenchReport report;
    report.json = FiguresToJson(figures);
    return report;
  }
  Progress progress("latency");
  PVGPU_ASSIGN_OR_RETURN(LatencyFigures inprocess, MeasureInprocess(counts, progress));
  progress.Step("channel");
  PVGPU_ASSIGN_OR_RETURN(LatencyFigures channel, MeasureChannel(counts, host->guest_library()));
  progress.Step("channel with PVGPU_PIPELINE=0");
  std::vector<std::string> args = {"bench", "latency", "--channel-only", "--json"};
  if (options.quick) args.push_back("--quick");
  PVGPU_ASSIGN_OR_RETURN(std::string child, host->RunSelf(args, {"PVGPU_PIPELINE=0"}));
  PVGPU_ASSIGN_OR_RETURN(LatencyFigures unpipelined, FiguresFromJson(child));
  const std::string address = host->is_private() ? "private pvgpud (cpu adapter)" : host->address();
  host->Stop();
  return MakeLatencyReport(inprocess, channel, unpipelined, address);
}

}  // namespace pvgpu::tools::bench
