// `pvgpu bench nbody`: the CUDA samples' `nbody -benchmark` experiment from the WSL GPU-PV
// articles. N bodies, all pairs, one warm-up step and then timed steps; interactions per second
// and GFLOP/s at 20 flops per interaction, as the samples report them. The same simulation runs
// through pvgpu, on the in-process adapter, and in plain C++ on one core and on all cores, and
// the final positions are compared.
#include <algorithm>
#include <optional>
#include <cmath>
#include <random>
#include <thread>

#include "common/cpus.h"
#include "tools/bench/bench.h"
#include "tools/bench/engine_report.h"
#include "tools/bench/guest_device.h"
#include "tools/bench/host_session.h"
#include "tools/bench/inprocess_device.h"
#include "tools/bench/kernels.h"
#include "tools/bench/opencl_device.h"
#include "tools/bench/reference.h"
#include "tools/bench/report.h"
#include "tools/bench/runtime_nbody.h"

namespace pvgpu::tools::bench {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kFlopsPerInteraction = 20;
// Final positions may differ by rounding (rsqrt, contraction); anything beyond this is a bug.
constexpr double kTolerance = 1e-3;

// Bodies uniformly in a cube, at rest, equal masses adding up to 1.
NbodyState InitialState(int n) {
  NbodyState state;
  state.n = n;
  state.positions.resize(4 * static_cast<size_t>(n));
  state.velocities.assign(4 * static_cast<size_t>(n), 0.f);
  std::mt19937 random(20201);
  std::uniform_real_distribution<float> coordinate(-1.f, 1.f);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) state.positions[4 * i + c] = coordinate(random);
    state.positions[4 * i + 3] = 1.f / static_cast<float>(n);
  }
  return state;
}

struct Run {
  std::string name;
  double seconds = 0;  // timed steps only
  std::vector<float> positions;
};

// One warm-up step, then `steps` timed ones; returns the time of the timed ones and the final
// positions. While the kernel waits for its compiled code (engine=auto) the warm-up step is
// repeated and the system then started again, so that the timed steps are the engine's
// steady state and follow the same trajectory as the reference's.
StatusOr<Run> RunOnDevice(Device& device, const NbodyState& initial, const NbodyParameters& params,
                          int steps, EngineWatch* watch = nullptr) {
  const int n = initial.n;
  const size_t bytes = initial.positions.size() * sizeof(float);
  uint64_t pos[2], vel;
  PVGPU_ASSIGN_OR_RETURN(pos[0], device.Allocate(bytes));
  PVGPU_ASSIGN_OR_RETURN(pos[1], device.Allocate(bytes));
  PVGPU_ASSIGN_OR_RETURN(vel, device.Allocate(bytes));
  PVGPU_TRY(device.Upload(pos[0], initial.positions.data(), bytes));
  PVGPU_TRY(device.Upload(vel, initial.velocities.data(), bytes));
  const Shape grid{(static_cast<unsigned>(n) + kNbodyBlock - 1) / kNbodyBlock};
  const Shape block{kNbodyBlock};
  int current = 0;
  auto step = [&]() -> Status {
    PVGPU_TRY(device.Launch(kNbodyKernel, grid, block,
                            {Arg(pos[current]), Arg(vel), Arg(pos[1 - current]), Arg(n),
                             Arg(params.dt), Arg(params.softening2)}));
    current = 1 - current;
    return Status::Ok();
  };
  auto warm = [&]() -> Status {
    PVGPU_TRY(step());
    return device.Synchronize();
  };
  PVGPU_TRY(warm());
  int extra_warmups = 0;
  if (watch != nullptr) {
    PVGPU_ASSIGN_OR_RETURN(extra_warmups, watch->RepeatWhileCodePending(warm));
  }
  if (extra_warmups > 0) {
    PVGPU_TRY(device.Upload(pos[0], initial.positions.data(), bytes));
    PVGPU_TRY(device.Upload(vel, initial.velocities.data(), bytes));
    current = 0;
    PVGPU_TRY(warm());
  }
  const Clock::time_point start = Clock::now();
  for (int s = 0; s < steps; ++s) PVGPU_TRY(step());
  PVGPU_TRY(device.Synchronize());
  Run run;
  run.name = device.label();
  run.seconds = SecondsSince(start);
  run.positions.resize(initial.positions.size());
  PVGPU_TRY(device.Download(run.positions.data(), pos[current], bytes));
  for (uint64_t buffer : {pos[0], pos[1], vel}) PVGPU_TRY(device.Free(buffer));
  return run;
}

Run RunReference(const NbodyState& initial, const NbodyParameters& params, int steps,
                 unsigned threads) {
  NbodyState state = initial;
  NbodySimulate(state, params, 1, threads);  // warm-up, as on the devices
  const Clock::time_point start = Clock::now();
  NbodySimulate(state, params, steps, threads);
  Run run;
  run.name = threads == 1 ? "C++, 1 thread" : "C++, " + std::to_string(threads) + " threads";
  run.seconds = SecondsSince(start);
  run.positions = std::move(state.positions);
  return run;
}

// Largest coordinate difference, relative to the coordinate's size (at least 1).
double MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1.0, std::fabs(static_cast<double>(b[i])));
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / scale);
  }
  return worst;
}

}  // namespace

StatusOr<BenchReport> RunNbody(const BenchOptions& options) {
  const int n = options.n > 0 ? options.n : 4096;
  const int steps = options.iterations > 0 ? options.iterations : (options.quick ? 1 : 5);
  const unsigned cores = UsableCpus();
  const NbodyParameters params;
  const NbodyState initial = InitialState(n);
  PVGPU_ASSIGN_OR_RETURN(auto host, HostSession::Start(options));

  Progress progress("nbody");
  std::vector<Run> runs;
  EngineWatch host_watch = EngineWatch::Host(host->address());
  {
    progress.Step("through pvgpu (channel)");
    PVGPU_ASSIGN_OR_RETURN(auto device, GuestDevice::Open(host->guest_library()));
    PVGPU_ASSIGN_OR_RETURN(Run run, RunOnDevice(*device, initial, params, steps, &host_watch));
    run.name = "pvgpu channel";
    runs.push_back(std::move(run));
  }
  // The same step launched through NVIDIA's CUDA runtime (an nvcc-built <<<>>> program) against
  // the same host: what the runtime layer costs on top of the driver API.
  std::string runtime_note;
  {
    progress.Step("CUDA runtime program through pvgpu");
    // Its kernel is its own (nvcc's PTX of bench/runtime/nbody.cu): one untimed run of one
    // step first, when the engine may still be compiling it, so that the timed run finds its
    // code in the host's disk cache (docs/jit.md).
    StatusOr<RuntimeNbodyRun> runtime = Error(Code::kUnknown, "not run");
    if (host_watch.engine() == "auto") {
      runtime = RunRuntimeNbody(*host, n, 1);
      if (runtime.ok()) host_watch.WaitWhileCodePending();
    }
    if (runtime.ok() || runtime.status().code() != Code::kNotFound) {
      runtime = RunRuntimeNbody(*host, n, steps);
    }
    if (runtime.ok()) {
      runs.push_back(
          Run{"pvgpu channel, CUDA runtime", runtime->seconds, std::move(runtime->positions)});
    } else if (runtime.status().code() == Code::kNotFound) {
      runtime_note = runtime.status().message();
    } else {
      return runtime.status().WithContext("the CUDA runtime nbody");
    }
  }
  const bool have_runtime = runtime_note.empty();
  const std::string address = host->is_private() ? "private pvgpud" : host->address();
  const EngineUse host_engine = host_watch.Finish();
  host->Stop();
  EngineUse inprocess_engine;
  {
    progress.Step("in-process adapter");
    PVGPU_ASSIGN_OR_RETURN(auto device, InprocessDevice::Open());
    EngineWatch watch = EngineWatch::InProcess(device->info().engine);
    PVGPU_ASSIGN_OR_RETURN(Run run, RunOnDevice(*device, initial, params, steps, &watch));
    inprocess_engine = watch.Finish();
    run.name = "cpu adapter in-process";
    runs.push_back(std::move(run));
  }
  const size_t inprocess = runs.size() - 1;
  // PoCL, the same kernel as OpenCL C, on all cores.
  std::string pocl_note;
  std::optional<size_t> pocl_index;
  {
    progress.Step("PoCL");
    auto pocl = OpenClDevice::OpenPocl();
    if (pocl.ok()) {
      PVGPU_ASSIGN_OR_RETURN(Run run, RunOnDevice(**pocl, initial, params, steps));
      run.name = "PoCL (OpenCL C), " + std::to_string((*pocl)->compute_units()) + " threads";
      pocl_note = (*pocl)->version();
      runs.push_back(std::move(run));
      pocl_index = runs.size() - 1;
    } else if (pocl.status().code() == Code::kNotFound) {
      pocl_note = pocl.status().message();
    } else {
      return pocl.status().WithContext("the PoCL row");
    }
  }
  progress.Step("plain C++");
  runs.push_back(RunReference(initial, params, steps, 1));
  const size_t reference_index = runs.size() - 1;
  if (cores > 1) runs.push_back(RunReference(initial, params, steps, cores));

  BenchReport report;
  Json& json = report.json;
  json["benchmark"] = "nbody";
  json["host"] = address;
  json["machine"] = MachineJson();
  json["bodies"] = n;
  json["iterations"] = steps;
  json["flops_per_interaction"] = kFlopsPerInteraction;
  const double interactions = static_cast<double>(n) * n * steps;
  const Run& reference = runs[reference_index];  // single-threaded C++
  TextTable table(
      {"implementation", "ms/step", "Ginteractions/s", "GFLOP/s", "vs channel", "max |diff|"});
  Json rows = Json::array();
  Plot plot;
  plot.title = "nbody, " + std::to_string(n) + " bodies";
  plot.y_label = "GFLOP/s";
  plot.log_y = true;
  PlotSeries gflops_series{"GFLOP/s", {}};
  for (const Run& run : runs) {
    const double rate = interactions / run.seconds;
    const double difference = MaxDifference(run.positions, reference.positions);
    const bool agrees = difference <= kTolerance;
    report.results_ok = report.results_ok && agrees;
    rows.push_back(Json{{"implementation", run.name},
                        {"seconds", run.seconds},
                        {"ms_per_step", run.seconds * 1e3 / steps},
                        {"interactions_per_second", rate},
                        {"gflops", rate * kFlopsPerInteraction / 1e9},
                        {"speed_vs_channel", runs[0].seconds / run.seconds},
                        {"max_difference", difference},
                        {"agrees", agrees}});
    table.AddRow({run.name, FormatNumber(run.seconds * 1e3 / steps, 1), FormatNumber(rate / 1e9, 4),
                  FormatNumber(rate * kFlopsPerInteraction / 1e9, 3),
                  FormatRatio(runs[0].seconds / run.seconds),
                  FormatNumber(difference, 7) + (agrees ? "" : " (!)")});
    plot.categories.push_back(run.name);
    gflops_series.values.push_back(rate * kFlopsPerInteraction / 1e9);
  }
  plot.series.push_back(gflops_series);
  report.plot = plot;
  json["runs"] = rows;
  // Speed ratio (higher is better for the channel), like the other benchmarks' ratios inverted.
  json["channel_speed_vs_inprocess"] = runs[inprocess].seconds / runs[0].seconds;
  // The CUDA runtime row's speed relative to the driver-API row (1: the runtime costs nothing).
  if (have_runtime) {
    json["runtime_speed_vs_driver_api"] = runs[0].seconds / runs[1].seconds;
  } else {
    json["runtime_speed_vs_driver_api"] = nullptr;
    json["runtime_note"] = runtime_note;
  }
  json["engine"] = {{"channel", EngineUseJson(host_engine)},
                    {"in_process", EngineUseJson(inprocess_engine)}};
  if (pocl_index) {
    json["pocl"] = pocl_note;
    json["channel_speed_vs_pocl"] = runs[*pocl_index].seconds / runs[0].seconds;
  } else {
    json["pocl"] = nullptr;
    json["pocl_note"] = pocl_note;
  }
  json["results_agree"] = report.results_ok;
  report.table = "pvgpu bench nbody: " + std::to_string(n) + " bodies, " + std::to_string(steps) +
                 " timed steps after 1 warm-up, " + FormatNumber(kFlopsPerInteraction, 0) +
                 " flops/interaction; host: " + address + "\n\n" + table.Render() +
                 "\nspeed through the channel / speed of the in-process adapter: " +
                 FormatRatio(runs[inprocess].seconds / runs[0].seconds) +
                 (have_runtime ? "; CUDA runtime / driver API through the channel: " +
                                     FormatRatio(runs[0].seconds / runs[1].seconds)
                               : "; no CUDA runtime row: " + runtime_note) +
                 "; results " + (report.results_ok ? "agree" : "DISAGREE") + " (tolerance " +
                 FormatNumber(kTolerance, 4) + ", relative to 1-thread C++)\n" +
                 "engine through the channel: " + DescribeEngineUse(host_engine) +
                 "\nengine in-process: " + DescribeEngineUse(inprocess_engine) + "\n" +
                 (pocl_index ? "PoCL: " + pocl_note + "; channel speed / PoCL speed: " +
                                   FormatRatio(runs[*pocl_index].seconds / runs[0].seconds)
                             : pocl_note) +
                 "\n";
  return report;
}

}  // namespace pvgpu::tools::bench
