// `pvgpu bench matmul`: the WSL article's TensorFlow script without TensorFlow. An N x N
// matrix A, uniform random in [0, 1), the sum of A * A^T, printed with the shape, the device
// and the time taken, for the GPU (a tiled sgemm kernel and a reduction, through pvgpu and on
// the in-process adapter) and the CPU (plain C++). The results are compared. Two more GPU rows
// show what emulating newer hardware paths costs: the product on tensor cores (WMMA, tf32
// inputs) and the tiled kernel with its tiles staged by cp.async, double buffered. With PoCL
// installed, the tiled kernel as OpenCL C runs as one more GPU row.
//
// The block reduction is also timed on its own (the target of a within-3x-of-C++ reduction):
// the sum of A's n * n elements by the shared-memory tree of the script's run and by a
// warp-shuffle variant, each repeated kReductionPasses times after a warm-up, against a plain
// C++ loop over the same elements.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "tools/bench/bench.h"
#include "tools/bench/engine_report.h"
#include "tools/bench/guest_device.h"
#include "tools/bench/host_session.h"
#include "tools/bench/inprocess_device.h"
#include "tools/bench/kernels.h"
#include "tools/bench/opencl_device.h"
#include "tools/bench/reference.h"
#include "tools/bench/report.h"

namespace pvgpu::tools::bench {
namespace {

using Json = nlohmann::ordered_json;

// Float accumulation on two different paths: agreement to this relative difference.
constexpr double kTolerance = 1e-4;
// Blocks of the reduction; the host adds their partial sums.
constexpr unsigned kSumBlocks = 64;
// Timed passes of each reduction (and of the C++ loop): one pass of n = 512 is about 0.3 ms.
constexpr int kReductionPasses = 20;

// The reduction kernels of the timed reduction rows.
struct Reduction {
  const char* kernel;
  const char* name;
};
constexpr Reduction kReductions[] = {
    {kSumKernel, "shared-memory tree"},
    {kSumShflKernel, "warp shuffles"},
};

struct ReductionResult {
  std::string where;
  double sum = 0;
  double seconds = 0;  // per pass
};

struct Result {
  std::string device;  // "gpu" or "cpu", as the script's argument
  std::string where;   // how it ran
  double sum = 0;
  double seconds = 0;
};

// A way to compute the product on the device.
struct Product {
  const char* kernel;
  const char* name;  // for the rows: "tiled", ...
  unsigned tile;     // C's tile per block (the grid is n / tile squared, rounded up)
  unsigned threads_x, threads_y;
  int multiple;  // n must be a multiple of it (0: any n)
};
constexpr Product kProducts[] = {
    {kSgemmKernel, "tiled", kSgemmTile, kSgemmTile, kSgemmTile, 0},
    {kWmmaTf32Kernel, "wmma tf32", 16, 32, 1, 16},
    {kSgemmAsyncKernel, "tiled cp.async", kSgemmTile, kSgemmTile, kSgemmTile, kSgemmTile},
};

// Queues the reduction `kernel` of `elements` floats at dx into kSumBlocks partial sums.
Status LaunchSum(Device& device, const char* kernel, uint64_t dx, int elements,
                 uint64_t dpartial) {
  return device.Launch(kernel, {kSumBlocks}, {kSumBlock}, {Arg(dx), Arg(elements), Arg(dpartial)});
}

// The partial sums' total (the reduction's last stage, on the host).
StatusOr<double> AddPartials(Device& device, uint64_t dpartial) {
  std::vector<float> partial(kSumBlocks);
  PVGPU_TRY(device.Download(partial.data(), dpartial, partial.size() * sizeof(float)));
  double sum = 0;
  for (float p : partial) sum += p;
  return sum;
}

// The script's session.run: matrix product and reduction, including moving A in and the
// partial sums out (what a session on a GPU would time as well).
StatusOr<Result> RunOnDevice(Device& device, const std::vector<float>& a, int n,
                             const Product& product) {
  const size_t bytes = a.size() * sizeof(float);
  const Clock::time_point start = Clock::now();
  uint64_t da, dc, dpartial;
  PVGPU_ASSIGN_OR_RETURN(da, device.Allocate(bytes));
  PVGPU_ASSIGN_OR_RETURN(dc, device.Allocate(bytes));
  PVGPU_ASSIGN_OR_RETURN(dpartial, device.Allocate(kSumBlocks * sizeof(float)));
  PVGPU_TRY(device.Upload(da, a.data(), bytes));
  const unsigned tiles = (static_cast<unsigned>(n) + product.tile - 1) / product.tile;
  PVGPU_TRY(device.Launch(product.kernel, {tiles, tiles}, {product.threads_x, product.threads_y},
                          {Arg(da), Arg(da), Arg(dc), Arg(n)}));
  const int elements = n * n;
  PVGPU_TRY(LaunchSum(device, kSumKernel, dc, elements, dpartial));
  PVGPU_TRY(device.Synchronize());
  Result result;
  result.device = "gpu";
  result.where = device.label();
  PVGPU_ASSIGN_OR_RETURN(result.sum, AddPartials(device, dpartial));
  result.seconds = SecondsSince(start);
  for (uint64_t buffer : {da, dc, dpartial}) PVGPU_TRY(device.Free(buffer));
  return result;
}

// One tiny untimed product first, so that neither device's timed run pays for starting its
// worker threads or its first kernel (a TensorFlow session is warm by session.run, too).
// While its kernels wait for their compiled code (engine=auto), the tiny product is repeated:
// what is timed is the engine's steady state (EngineWatch::RepeatWhileCodePending).
StatusOr<Result> RunWarm(Device& device, const std::vector<float>& a, int n,
                         const Product& product, EngineWatch* watch = nullptr) {
  const std::vector<float> small(16 * 16, 0.5f);
  auto warm = [&]() -> Status { return RunOnDevice(device, small, 16, product).status(); };
  PVGPU_TRY(warm());
  if (watch != nullptr) PVGPU_TRY(watch->RepeatWhileCodePending(warm).status());
  return RunOnDevice(device, a, n, product);
}

// The sum of `a` by `reduction`: one untimed pass (repeated while its code is pending, as
// RunWarm), then kReductionPasses queued passes and one synchronize, timed.
StatusOr<ReductionResult> RunReduction(Device& device, const std::vector<float>& a,
                                       const Reduction& reduction, EngineWatch* watch) {
  const size_t bytes = a.size() * sizeof(float);
  const int elements = static_cast<int>(a.size());
  uint64_t dx, dpartial;
  PVGPU_ASSIGN_OR_RETURN(dx, device.Allocate(bytes));
  PVGPU_ASSIGN_OR_RETURN(dpartial, device.Allocate(kSumBlocks * sizeof(float)));
  PVGPU_TRY(device.Upload(dx, a.data(), bytes));
  auto pass = [&]() { return LaunchSum(device, reduction.kernel, dx, elements, dpartial); };
  auto warm = [&]() -> Status {
    PVGPU_TRY(pass());
    return device.Synchronize();
  };
  PVGPU_TRY(warm());
  if (watch != nullptr) PVGPU_TRY(watch->RepeatWhileCodePending(warm).status());
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kReductionPasses; ++i) PVGPU_TRY(pass());
  PVGPU_TRY(device.Synchronize());
  ReductionResult result;
  result.seconds = SecondsSince(start) / kReductionPasses;
  PVGPU_ASSIGN_OR_RETURN(result.sum, AddPartials(device, dpartial));
  for (uint64_t buffer : {dx, dpartial}) PVGPU_TRY(device.Free(buffer));
  return result;
}

// Both reductions on one device, rows named "<prefix>, <reduction>".
Status RunReductions(Device& device, const std::vector<float>& a, const std::string& prefix,
                     EngineWatch* watch, std::vector<ReductionResult>* out) {
  for (const Reduction& reduction : kReductions) {
    PVGPU_ASSIGN_OR_RETURN(ReductionResult r, RunReduction(device, a, reduction, watch));
    r.where = prefix + ", " + reduction.name;
    out->push_back(r);
  }
  return Status::Ok();
}

// The products that fit n.
std::vector<const Product*> ProductsFor(int n) {
  std::vector<const Product*> products;
  for (const Product& p : kProducts) {
    if (p.multiple == 0 || n % p.multiple == 0) products.push_back(&p);
  }
  return products;
}

// "0:00:01.234567", as Python prints a timedelta.
std::string FormatTimedelta(double seconds) {
  const long micros = std::lround(seconds * 1e6);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%ld:%02ld:%02ld.%06ld", micros / 3600000000L,
                micros / 60000000L % 60, micros / 1000000L % 60, micros % 1000000L);
  return buffer;
}

}  // namespace

StatusOr<BenchReport> RunMatmul(const BenchOptions& options) {
  const int n = options.n > 0 ? options.n : 512;
  std::vector<float> a(static_cast<size_t>(n) * n);
  std::mt19937 random(2020);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  for (float& x : a) x = uniform(random);

  Progress progress("matmul");
  std::vector<Result> results;
  std::vector<ReductionResult> reductions;
  std::string address;
  EngineUse host_engine, inprocess_engine;
  std::string pocl_note;
  if (options.device != "cpu") {
    PVGPU_ASSIGN_OR_RETURN(auto host, HostSession::Start(options));
    progress.Step("gpu through pvgpu");
    EngineWatch host_watch = EngineWatch::Host(host->address());
    {
      // The context goes before the host does, or its destruction would find no host.
      PVGPU_ASSIGN_OR_RETURN(auto device, GuestDevice::Open(host->guest_library()));
      for (const Product* product : ProductsFor(n)) {
        PVGPU_ASSIGN_OR_RETURN(Result result, RunWarm(*device, a, n, *product, &host_watch));
        result.where = std::string("pvgpu channel, ") + product->name;
        results.push_back(result);
      }
      PVGPU_TRY(RunReductions(*device, a, "pvgpu channel", &host_watch, &reductions));
    }
    address = host->is_private() ? "private pvgpud" : host->address();
    host_engine = host_watch.Finish();
    host->Stop();
    progress.Step("gpu in-process");
    PVGPU_ASSIGN_OR_RETURN(auto inprocess, InprocessDevice::Open());
    EngineWatch watch = EngineWatch::InProcess(inprocess->info().engine);
    for (const Product* product : ProductsFor(n)) {
      PVGPU_ASSIGN_OR_RETURN(Result result, RunWarm(*inprocess, a, n, *product, &watch));
      result.where = std::string("cpu adapter in-process, ") + product->name;
      results.push_back(result);
    }
    PVGPU_TRY(RunReductions(*inprocess, a, "cpu adapter in-process", &watch, &reductions));
    inprocess_engine = watch.Finish();
    // PoCL: the tiled kernel as OpenCL C, on all cores (the tensor-core and cp.async variants
    // have no OpenCL form).
    progress.Step("gpu PoCL");
    auto pocl = OpenClDevice::OpenPocl();
    if (pocl.ok()) {
      PVGPU_ASSIGN_OR_RETURN(Result result, RunWarm(**pocl, a, n, kProducts[0]));
      result.where = "PoCL (OpenCL C), tiled, " + std::to_string((*pocl)->compute_units()) +
                     " threads";
      pocl_note = "PoCL: " + (*pocl)->version();
      results.push_back(result);
      PVGPU_ASSIGN_OR_RETURN(ReductionResult r,
                             RunReduction(**pocl, a, kReductions[0], /*watch=*/nullptr));
      r.where = std::string("PoCL (OpenCL C), ") + kReductions[0].name;
      reductions.push_back(r);
    } else if (pocl.status().code() == Code::kNotFound) {
      pocl_note = pocl.status().message();
    } else {
      return pocl.status().WithContext("the PoCL row");
    }
  }
  if (options.device != "gpu") {
    progress.Step("cpu");
    const Clock::time_point start = Clock::now();
    Result result;
    result.device = "cpu";
    result.where = "plain C++ 1 thread";
    result.sum = SumOfProductWithTranspose(a, n);
    result.seconds = SecondsSince(start);
    results.push_back(result);
    if (!reductions.empty()) {
      ReductionResult r;
      r.where = "plain C++ 1 thread";
      const Clock::time_point begin = Clock::now();
      for (int i = 0; i < kReductionPasses; ++i) r.sum = SumInOrder(a);
      r.seconds = SecondsSince(begin) / kReductionPasses;
      reductions.push_back(r);
    }
  }

  BenchReport report;
  Json& json = report.json;
  json["benchmark"] = "matmul";
  if (!address.empty()) json["host"] = address;
  json["machine"] = MachineJson();
  json["n"] = n;
  json["shape"] = Json::array({n, n});
  const double flops = 2.0 * n * n * static_cast<double>(n);
  const double expected = results.back().sum;  // cpu when it ran, else the last gpu row
  std::string text = "pvgpu bench matmul: sum(A * A^T), A uniform random in [0, 1)\n\n";
  TextTable table({"device", "how", "result", "time (s)", "GFLOP/s", "vs first"});
  Json runs = Json::array();
  double worst = 0;
  for (const Result& r : results) {
    const double difference = std::fabs(r.sum - expected) / std::max(1.0, std::fabs(expected));
    worst = std::max(worst, difference);
    char sum[64];
    std::snprintf(sum, sizeof(sum), "%.1f", r.sum);
    const std::string device_name = r.device == "gpu" ? "/gpu:0" : "/cpu:0";
    text += std::string(sum) + "\nShape: (" + std::to_string(n) + ", " + std::to_string(n) +
            ") Device: " + device_name + " (" + r.where +
            ")\nTime taken: " + FormatTimedelta(r.seconds) + "\n\n";
    table.AddRow({r.device, r.where, sum, FormatNumber(r.seconds, 4),
                  FormatNumber(flops / r.seconds / 1e9, 3),
                  FormatRatio(results.front().seconds / r.seconds)});
    runs.push_back(Json{{"device", r.device},
                        {"how", r.where},
                        {"result", r.sum},
                        {"seconds", r.seconds},
                        {"gflops", flops / r.seconds / 1e9},
                        {"relative_difference", difference}});
  }
  // The reductions, against the C++ loop (the last row) when it ran.
  TextTable reduction_table({"reduction of A's elements", "result", "ms per pass", "GB/s",
                             "time vs C++"});
  Json reduction_runs = Json::array();
  const double elements_bytes = static_cast<double>(a.size()) * sizeof(float);
  const bool have_cpp = !reductions.empty() && options.device != "gpu";  // its row comes last
  for (const ReductionResult& r : reductions) {
    const double reference = reductions.back().sum;
    const double difference = std::fabs(r.sum - reference) / std::max(1.0, std::fabs(reference));
    worst = std::max(worst, difference);
    char sum[64];
    std::snprintf(sum, sizeof(sum), "%.1f", r.sum);
    const double vs_cpp = have_cpp ? r.seconds / reductions.back().seconds : 0;
    reduction_table.AddRow({r.where, sum, FormatNumber(r.seconds * 1e3, 4),
                            FormatNumber(elements_bytes / r.seconds / 1e9, 3),
                            have_cpp ? FormatNumber(vs_cpp, 3) + "x" : "-"});
    Json row{{"how", r.where},
             {"result", r.sum},
             {"seconds_per_pass", r.seconds},
             {"gbps", elements_bytes / r.seconds / 1e9},
             {"relative_difference", difference}};
    if (have_cpp) row["time_vs_cpp"] = vs_cpp;
    reduction_runs.push_back(row);
  }
  report.results_ok = worst <= kTolerance;
  json["runs"] = runs;
  json["reductions"] = reduction_runs;
  json["reduction_passes"] = kReductionPasses;
  json["max_relative_difference"] = worst;
  json["results_agree"] = report.results_ok;
  if (options.device != "cpu") {
    json["engine"] = {{"channel", EngineUseJson(host_engine)},
                      {"in_process", EngineUseJson(inprocess_engine)}};
    json["pocl"] = pocl_note;
  }
  if (!reductions.empty()) {
    text += table.Render() + "\nThe reduction alone (" + std::to_string(a.size()) +
            " floats, " + std::to_string(kSumBlocks) + " blocks of " + std::to_string(kSumBlock) +
            " threads, " + std::to_string(kReductionPasses) + " passes after a warm-up):\n";
    report.table = text + reduction_table.Render();
  } else {
    report.table = text + table.Render();
  }
  report.table = report.table + "\nresults " + (report.results_ok ? "agree" : "DISAGREE") +
                 ": largest relative difference " + FormatNumber(worst * 1e6, 3) +
                 "e-6 (tolerance " + FormatNumber(kTolerance, 4) + ")\n";
  if (options.device != "cpu") {
    report.table += "engine through the channel: " + DescribeEngineUse(host_engine) +
                    "\nengine in-process: " + DescribeEngineUse(inprocess_engine) + "\n" +
                    pocl_note + "\n";
  }
  Plot plot;
  plot.title = "matmul sum(A * A^T), n = " + std::to_string(n);
  plot.y_label = "GFLOP/s";
  PlotSeries series{"GFLOP/s", {}};
  for (const Result& r : results) {
    plot.categories.push_back(r.device + ": " + r.where);
    series.values.push_back(flops / r.seconds / 1e9);
  }
  plot.series.push_back(series);
  report.plot = plot;
  return report;
}

}  // namespace pvgpu::tools::bench
