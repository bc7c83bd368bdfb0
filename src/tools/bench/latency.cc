// `pvgpu bench latency`: what one small operation costs in-process, through the channel, and
// through the channel with PVGPU_PIPELINE=0 (every call waits for the host, as the original
// GPU-PV did).
//
// The three modes take turns: each round times every operation once in each mode, one mode
// right after the other, and each figure is the best of the rounds. A shared machine's speed
// drifts over seconds, so modes measured one after the other (as they were at first) could
// see different machines; taking turns puts each ratio's two figures a few milliseconds apart.
// PVGPU_PIPELINE is read once, when the guest library creates its client, so the unpipelined
// mode runs in a child pvgpu (`--channel-only`) that performs one round per line it is sent.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include "tools/bench/bench.h"
#include "tools/bench/device.h"
#include "tools/bench/guest_device.h"
#include "tools/bench/host_session.h"
#include "tools/bench/inprocess_device.h"
#include "tools/bench/kernels.h"
#include "tools/bench/latency_report.h"
#include "tools/bench/remote_path.h"
#include "tools/bench/report.h"

namespace pvgpu::tools::bench {
namespace {

struct Counts {
  int launches, syncs, queries, copies, rounds;
};

Counts CountsFor(bool quick) {
  if (quick) return Counts{200, 40, 1000, 40, 1};
  return Counts{10000, 1000, 100000, 1000, 5};
}

// The operations every mode times, in the order of a round (kOps is indexed by them).
enum class Op {
  kLaunchAsync,
  kLaunchSync,
  kLaunchCall,
  kStreamQuery,
  kEventQuery,
  kCopyHtod,
  kCopyDtoh
};

// What the benchmark knows of an operation: its name on the line protocol with the child, how
// many a round does, its figure and, for those the report gives, its context switches.
struct OpInfo {
  Op op;
  const char* name;
  int Counts::*count;
  double LatencyFigures::*figure;
  double LatencyFigures::Switches::*switches;  // null: not reported
};
constexpr OpInfo kOps[] = {
    {Op::kLaunchAsync, "launch_async", &Counts::launches, &LatencyFigures::launch_async,
     &LatencyFigures::Switches::launch_async},
    {Op::kLaunchSync, "launch_sync", &Counts::syncs, &LatencyFigures::launch_sync,
     &LatencyFigures::Switches::launch_sync},
    {Op::kLaunchCall, "launch_call", &Counts::launches, &LatencyFigures::launch_call, nullptr},
    {Op::kStreamQuery, "stream_query", &Counts::queries, &LatencyFigures::stream_query, nullptr},
    {Op::kEventQuery, "event_query", &Counts::queries, &LatencyFigures::event_query, nullptr},
    {Op::kCopyHtod, "copy_htod", &Counts::copies, &LatencyFigures::copy_htod,
     &LatencyFigures::Switches::copy_htod},
    {Op::kCopyDtoh, "copy_dtoh", &Counts::copies, &LatencyFigures::copy_dtoh,
     &LatencyFigures::Switches::copy_dtoh},
};

const OpInfo& InfoOf(Op op) { return kOps[static_cast<size_t>(op)]; }
static_assert([] {
  for (size_t i = 0; i < std::size(kOps); ++i) {
    if (static_cast<size_t>(kOps[i].op) != i) return false;
  }
  return std::size(kOps) == static_cast<size_t>(Op::kCopyDtoh) + 1;
}());

std::optional<Op> OpNamed(std::string_view name) {
  for (const OpInfo& info : kOps) {
    if (name == info.name) return info.op;
  }
  return std::nullopt;
}

// Context switches of the calling thread so far (voluntary and not).
long ThreadSwitches() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

// One round of one operation: the seconds that count and the thread's context switches.
struct Round {
  double seconds = 0;
  long switches = 0;
};

// Seconds that `body(count)` takes. `body` returns a Status for its whole batch so that
// failures stop the benchmark instead of being timed.
StatusOr<double> Timed(int count, const std::function<Status(int)>& body) {
  const Clock::time_point start = Clock::now();
  PVGPU_TRY(body(count));
  return SecondsSince(start);
}

// Launches per burst for `launch_call`: their messages (about 150 bytes each) fit in any ring
// many times over, so a pipelined call never waits for room.
constexpr int kLaunchBurst = 100;

// Seconds spent inside `call` alone, `count` times: in bursts of kLaunchBurst, each followed
// by `settle`, which is not timed.
StatusOr<double> TimedBursts(int count, const std::function<Status()>& call,
                             const std::function<Status()>& settle) {
  double seconds = 0;
  for (int done = 0; done < count;) {
    const int n = std::min(kLaunchBurst, count - done);
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < n; ++i) PVGPU_TRY(call());
    seconds += SecondsSince(start);
    PVGPU_TRY(settle());
    done += n;
  }
  return seconds;
}

// One way of doing the operations: in-process, through the channel, or a child doing it.
class Mode {
 public:
  virtual ~Mode() = default;
  virtual StatusOr<Round> Run(Op op, int count) = 0;
};

// A mode that runs in this process; it counts this thread's context switches.
class LocalMode : public Mode {
 public:
  StatusOr<Round> Run(Op op, int count) final {
    const long before = ThreadSwitches();
    PVGPU_ASSIGN_OR_RETURN(double seconds, Seconds(op, count));
    return Round{seconds, ThreadSwitches() - before};
  }

 protected:
  virtual StatusOr<double> Seconds(Op op, int count) = 0;
};

class InprocessMode final : public LocalMode {
 public:
  static StatusOr<std::unique_ptr<InprocessMode>> Open() {
    std::unique_ptr<InprocessMode> mode(new InprocessMode());
    PVGPU_ASSIGN_OR_RETURN(mode->device_, InprocessDevice::Open());
    PVGPU_ASSIGN_OR_RETURN(mode->empty_, mode->device_->KernelIndex(kEmptyKernel));
    PVGPU_ASSIGN_OR_RETURN(mode->word_, mode->device_->Allocate(4));
    PVGPU_TRY(mode->device_->Upload(mode->word_, &mode->value_, 4));
    PVGPU_TRY(mode->Launches(10));  // warms caches and the executor's per-thread buffers
    return mode;
  }

 private:
  InprocessMode() = default;

  Status Launch() { return device_->LaunchPrepared(empty_, {1}, {32}, no_params_); }
  Status Launches(int count) {
    for (int i = 0; i < count; ++i) PVGPU_TRY(Launch());
    return Status::Ok();
  }

  StatusOr<double> Seconds(Op op, int count) override {
    switch (op) {
      // An adapter launch returns when the kernel is done: launch, launch + synchronize and
      // the launch call are one thing.
      case Op::kLaunchAsync:
      case Op::kLaunchSync:
        return Timed(count, [&](int n) { return Launches(n); });
      case Op::kLaunchCall:
        return TimedBursts(
            count, [&] { return Launch(); }, [] { return Status::Ok(); });
      case Op::kStreamQuery:
      case Op::kEventQuery:
        // Natively, asking whether finished work is finished is one read of a completion
        // counter.
        return Timed(count, [&](int n) -> Status {
          uint64_t done = 0;
          for (int i = 0; i < n; ++i) done += fence_.load(std::memory_order_acquire) >= 1;
          return done == static_cast<uint64_t>(n) ? Status::Ok()
                                                  : Error(Code::kUnknown, "fence went back");
        });
      case Op::kCopyHtod:
        return Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) PVGPU_TRY(device_->Upload(word_, &value_, 4));
          return Status::Ok();
        });
      case Op::kCopyDtoh:
        return Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) PVGPU_TRY(device_->Download(&value_, word_, 4));
          return Status::Ok();
        });
    }
    return Error(Code::kInvalidValue, "unknown operation");
  }

  std::unique_ptr<InprocessDevice> device_;
  uint32_t empty_ = 0;
  uint64_t word_ = 0;
  const std::vector<uint8_t> no_params_;
  std::atomic<uint64_t> fence_{1};
  uint32_t value_ = 42;
};

class ChannelMode final : public LocalMode {
 public:
  static StatusOr<std::unique_ptr<ChannelMode>> Open(const std::string& library) {
    std::unique_ptr<ChannelMode> mode(new ChannelMode());
    PVGPU_ASSIGN_OR_RETURN(mode->device_, GuestDevice::Open(library));
    PVGPU_ASSIGN_OR_RETURN(mode->empty_, mode->device_->Function(kEmptyKernel));
    PVGPU_ASSIGN_OR_RETURN(mode->word_, mode->device_->Allocate(4));
    const DriverApi& api = mode->device_->api();
    PVGPU_TRY(api.Check(api.cuEventCreate(&mode->event_, CU_EVENT_DEFAULT), "cuEventCreate"));
    // Wakes the host's session thread and warms its buffers; the event, recorded after that
    // work and waited for, stays complete, so every query below is of finished work.
    for (int i = 0; i < 10; ++i) PVGPU_TRY(mode->Launch());
    PVGPU_TRY(api.Check(api.cuEventRecord(mode->event_, nullptr), "cuEventRecord"));
    // The word the 4-byte copies move holds the value they carry from the start, so that each
    // operation stands alone (the child may be asked for DtoH copies first).
    PVGPU_TRY(mode->device_->Upload(mode->word_, &mode->value_, 4));
    PVGPU_TRY(mode->Sync());
    return mode;
  }
  ~ChannelMode() override {
    if (event_ != nullptr) (void)device_->api().cuEventDestroy_v2(event_);
  }

 private:
  ChannelMode() = default;

  const DriverApi& api() const { return device_->api(); }
  Status Launch() {
    return api().Check(
        api().cuLaunchKernel(empty_, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
        "cuLaunchKernel");
  }
  Status Sync() { return api().Check(api().cuCtxSynchronize(), "cuCtxSynchronize"); }

  StatusOr<double> Seconds(Op op, int count) override {
    switch (op) {
      case Op::kLaunchAsync:
        // Many launches, then one synchronize: the pipelined pattern of a real application.
        return Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) PVGPU_TRY(Launch());
          return Sync();
        });
      case Op::kLaunchSync:
        return Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) {
            PVGPU_TRY(Launch());
            PVGPU_TRY(Sync());
          }
          return Status::Ok();
        });
      case Op::kLaunchCall:
        // What cuLaunchKernel keeps the application's thread when the ring has room: the host
        // runs each burst while it is being submitted.
        return TimedBursts(
            count, [&] { return Launch(); }, [&] { return Sync(); });
      case Op::kStreamQuery:
        return Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) {
            PVGPU_TRY(api().Check(api().cuStreamQuery(nullptr), "cuStreamQuery"));
          }
          return Status::Ok();
        });
      case Op::kEventQuery:
        return Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) {
            PVGPU_TRY(api().Check(api().cuEventQuery(event_), "cuEventQuery"));
          }
          return Status::Ok();
        });
      case Op::kCopyHtod:
        // A synchronous HtoD copy may return before the host has the bytes (CUDA allows it for
        // pageable memory); the final synchronize makes the figure include the delivery.
        return Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) PVGPU_TRY(device_->Upload(word_, &value_, 4));
          return Sync();
        });
      case Op::kCopyDtoh: {
        value_ = 0;  // a copy that writes nothing must not pass the check below
        auto seconds = Timed(count, [&](int n) -> Status {
          for (int i = 0; i < n; ++i) PVGPU_TRY(device_->Download(&value_, word_, 4));
          return Status::Ok();
        });
        if (seconds.ok() && value_ != 42) {
          return Error(Code::kUnknown, "4-byte round trip returned the wrong value");
        }
        return seconds;
      }
    }
    return Error(Code::kInvalidValue, "unknown operation");
  }

  std::unique_ptr<GuestDevice> device_;
  CUfunction empty_ = nullptr;
  uint64_t word_ = 0;
  CUevent event_ = nullptr;
  uint32_t value_ = 42;
};

// The PVGPU_PIPELINE=0 mode: a child pvgpu doing each round when asked (ServeRounds).
class ChildMode final : public Mode {
 public:
  explicit ChildMode(std::unique_ptr<SelfChild> child) : child_(std::move(child)) {}

  StatusOr<Round> Run(Op op, int count) override {
    PVGPU_ASSIGN_OR_RETURN(std::string answer,
                           child_->Ask(std::string(InfoOf(op).name) + " " + std::to_string(count)));
    std::istringstream in(answer);
    std::string word;
    Round round;
    if (in >> word && word == "ok" && in >> round.seconds >> round.switches) return round;
    return Error(Code::kUnknown, "the PVGPU_PIPELINE=0 run failed: " + answer);
  }
  Status Finish() { return child_->Finish(); }

 private:
  std::unique_ptr<SelfChild> child_;
};

// The child's side: one round per line "OPERATION COUNT" on stdin, answered on stdout with
// "ok SECONDS SWITCHES" or "error MESSAGE", until stdin ends.
Status ServeRounds(Mode& mode) {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string name;
    int count = 0;
    std::optional<Op> op;
    if (in >> name >> count) op = OpNamed(name);
    if (!op || count <= 0) {
      std::printf("error malformed request '%s'\n", line.c_str());
      std::fflush(stdout);
      return Error(Code::kInvalidValue, "malformed request '" + line + "'");
    }
    StatusOr<Round> round = mode.Run(*op, count);
    if (!round.ok()) {
      std::printf("error %s\n", round.status().message().c_str());
      std::fflush(stdout);
      return round.status();
    }
    std::printf("ok %.17g %ld\n", round->seconds, round->switches);
    std::fflush(stdout);
  }
  return Status::Ok();
}

// Every operation, `counts.rounds` times, the modes taking turns (who goes first rotates from
// round to round). Microseconds per operation, best of the rounds; switches per operation
// over all rounds.
StatusOr<std::vector<LatencyFigures>> MeasureInTurns(const Counts& counts,
                                                     const std::vector<Mode*>& modes,
                                                     RemotePath* path, Progress& progress) {
  const size_t n = modes.size();
  std::vector<LatencyFigures> figures(n);
  for (LatencyFigures& f : figures) {
    for (const OpInfo& info : kOps) f.*info.figure = INFINITY;
  }
  for (int r = 0; r < counts.rounds; ++r) {
    progress.Step("round " + std::to_string(r + 1) + " of " + std::to_string(counts.rounds));
    for (const OpInfo& info : kOps) {
      const int count = counts.*info.count;
      for (size_t k = 0; k < n; ++k) {
        const size_t m = (r + k) % n;
        PVGPU_ASSIGN_OR_RETURN(Round round, modes[m]->Run(info.op, count));
        double& best = figures[m].*info.figure;
        best = std::min(best, round.seconds * 1e6 / count);
        if (info.switches != nullptr) {
          figures[m].switches.*info.switches +=
              static_cast<double>(round.switches) / (counts.rounds * count);
        }
      }
      // A remote host's raw round trip, right after the modes' copies it is the limit of.
      if (info.op == Op::kCopyDtoh && path != nullptr) {
        PVGPU_TRY(path->MeasureRoundTrip(std::max(count, 1000)));
      }
    }
  }
  return figures;
}

}  // namespace

StatusOr<BenchReport> RunLatency(const BenchOptions& options) {
  const Counts counts = CountsFor(options.quick);
  PVGPU_ASSIGN_OR_RETURN(auto host, HostSession::Start(options));
  if (options.channel_only) {
    // The child half: PVGPU_PIPELINE is already in this process's environment.
    PVGPU_ASSIGN_OR_RETURN(auto channel, ChannelMode::Open(host->guest_library()));
    PVGPU_TRY(ServeRounds(*channel));
    BenchReport report;
    report.json = nlohmann::ordered_json{{"served", true}};
    return report;
  }
  Progress progress("latency");
  progress.Step("starting");
  PVGPU_ASSIGN_OR_RETURN(auto inprocess, InprocessMode::Open());
  PVGPU_ASSIGN_OR_RETURN(auto channel, ChannelMode::Open(host->guest_library()));
  // The child talks to this very host (named, so that it fails rather than starting a private
  // host of its own should the address not answer).
  std::vector<std::string> args = {"bench",  "latency", "--channel-only",
                                   "--json", "--host",  host->address()};
  if (options.quick) args.push_back("--quick");
  PVGPU_ASSIGN_OR_RETURN(auto child, host->StartSelf(args, {"PVGPU_PIPELINE=0"}));
  ChildMode unpipelined(std::move(child));
  // A remote host: its raw path's round trip is measured in every round too.
  std::string path_error;
  auto path = RemotePath::Open(host->address());
  if (!path.ok()) {
    path_error = path.status().message();
    path = std::unique_ptr<RemotePath>();
  }
  PVGPU_ASSIGN_OR_RETURN(auto figures,
                         MeasureInTurns(counts, {inprocess.get(), channel.get(), &unpipelined},
                                        path->get(), progress));
  PVGPU_TRY(unpipelined.Finish());
  const std::string address = host->is_private() ? "private pvgpud (cpu adapter)" : host->address();
  channel.reset();
  host->Stop();
  BenchReport report =
      MakeLatencyReport(figures[0], figures[1], figures[2], address, counts.rounds);
  if (*path) {
    AddPathToLatencyReport(**path, figures[0], figures[1], counts.launches, &report);
  } else if (!path_error.empty()) {
    report.json["path"] = nlohmann::ordered_json{{"error", path_error}};
    report.table += "\npath limits: n/a (" + path_error + ")\n";
  }
  return report;
}

}  // namespace pvgpu::tools::bench
