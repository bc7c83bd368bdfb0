// `pvgpu bench matmul`: the WSL article's TensorFlow script without TensorFlow. An N x N
// matrix A, uniform random in [0, 1), the sum of A * A^T, printed with the shape, the device
// and the time taken, for the GPU (a tiled sgemm kernel and a reduction, through pvgpu and on
// the in-process adapter) and the CPU (plain C++). The results are compared. Two more GPU rows
// show what emulating newer hardware paths costs: the product on tensor cores (WMMA, tf32
// inputs) and the tiled kernel with its tiles staged by cp.async, double buffered. With PoCL
// installed, the tiled kernel as OpenCL C runs as one more GPU row.
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
  PVGPU_TRY(device.Launch(kSumKernel, {kSumBlocks}, {kSumBlock},
                          {Arg(dc), Arg(elements), Arg(dpartial)}));
  std::vector<float> partial(kSumBlocks);
  PVGPU_TRY(device.Synchronize());
  PVGPU_TRY(device.Download(partial.data(), dpartial, partial.size() * sizeof(float)));
  Result result;
  result.device = "gpu";
  result.where = device.label();
  for (float p : partial) result.sum += p;
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
  report.results_ok = worst <= kTolerance;
  json["runs"] = runs;
  json["max_relative_difference"] = worst;
  json["results_agree"] = report.results_ok;
  if (options.device != "cpu") {
    json["engine"] = {{"channel", EngineUseJson(host_engine)},
                      {"in_process", EngineUseJson(inprocess_engine)}};
    json["pocl"] = pocl_note;
  }
  report.table = text + table.Render() + "\nresults " + (report.results_ok ? "agree" : "DISAGREE") +
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
