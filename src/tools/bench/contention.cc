// `pvgpu bench contention`: what compute sharing does under load (docs/sharing.md). A private
// pvgpud with three listeners (compute shares 3 and 1, and one of high priority) serves guest
// processes (this pvgpu again, `--contention-worker`, each with PVGPU_HOST on its listener):
//
//   alone      one guest floods the cpu adapter with 16-block kernels: its kernels per second
//   fairness   the share-3 and share-1 guests flood it together: their kernels and the ratio
//              (expected 3), and the adapter's total next to the lone guest's rate
//   latency    launch + synchronize of an empty kernel from the high-priority guest, idle and
//              while the share-1 guest floods, next to a normal guest's under the same flood
//
// Figures, not assertions: the latency under load depends on how soon the OS runs the guest's
// and its session's threads while the flood keeps every core busy.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/bench/bench.h"
#include "tools/bench/guest_device.h"
#include "tools/bench/host_session.h"
#include "tools/bench/report.h"
#include "tools/install_layout.h"

namespace pvgpu::tools::bench {
namespace {

constexpr unsigned kFloodBlocks = 16;
constexpr unsigned kSpinIters = 3000;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The worker half: one answer line per request line, until stdin ends.
Status ServeWorker(const BenchOptions& options) {
  PVGPU_ASSIGN_OR_RETURN(InstallLayout layout, FindInstallLayout());
  PVGPU_ASSIGN_OR_RETURN(auto device, GuestDevice::Open(layout.guest_lib_dir + "/libcuda.so.1"));
  PVGPU_ASSIGN_OR_RETURN(uint64_t out, device->Allocate(16));
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream request(line);
    std::string what;
    double amount = 0;
    request >> what >> amount;
    if (what == "flood") {
      uint64_t launched = 0;
      const unsigned iters = kSpinIters;
      const double end = Now() + amount;
      while (Now() < end) {
        for (int i = 0; i < 4; ++i) {
          PVGPU_TRY(device->Launch("bench_spin", {kFloodBlocks}, {64}, {Arg(iters), Arg(out)}));
          ++launched;
        }
        PVGPU_TRY(device->Synchronize());
      }
      std::printf("%llu\n", static_cast<unsigned long long>(launched));
    } else if (what == "latency") {
      std::vector<double> us;
      for (int i = 0; i < static_cast<int>(amount); ++i) {
        const double start = Now();
        PVGPU_TRY(device->Launch("bench_empty", {1}, {32}, {}));
        PVGPU_TRY(device->Synchronize());
        us.push_back((Now() - start) * 1e6);
      }
      std::sort(us.begin(), us.end());
      std::printf("%.2f %.2f\n", us[us.size() / 2], us[us.size() * 9 / 10]);
    } else {
      return Error(Code::kInvalidValue, "contention worker: unknown request '" + line + "'");
    }
    std::fflush(stdout);
  }
  return Status::Ok();
}

struct Latency {
  double median = 0, p90 = 0;
};

StatusOr<Latency> ParseLatency(const std::string& answer) {
  Latency l;
  if (std::sscanf(answer.c_str(), "%lf %lf", &l.median, &l.p90) != 2) {
    return Error(Code::kUnknown, "contention worker answered '" + answer + "'");
  }
  return l;
}

StatusOr<double> ParseCount(const std::string& answer) {
  char* end = nullptr;
  const double value = std::strtod(answer.c_str(), &end);
  if (end == answer.c_str()) return Error(Code::kUnknown, "contention worker answered '" + answer + "'");
  return value;
}

}  // namespace

StatusOr<BenchReport> RunContention(const BenchOptions& options) {
  if (options.contention_worker) {
    PVGPU_TRY(ServeWorker(options));
    BenchReport report;
    report.json = nlohmann::ordered_json{{"served", true}};
    return report;
  }
  if (options.host) {
    return Error(Code::kInvalidValue,
                 "contention needs listeners with chosen shares: it always starts a private "
                 "pvgpud (no --host)");
  }
  char dir_template[] = "/tmp/pvgpu-contention-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return Error(Code::kUnknown, "mkdtemp failed");
  const std::string dir = dir_template;
  const std::string config = dir + "/config.json";
  std::ofstream(config) << "{\"listeners\": [\n"
                        << "  {\"address\": \"unix:" << dir << "/heavy.sock\", \"compute_share\": 3},\n"
                        << "  {\"address\": \"unix:" << dir << "/light.sock\", \"compute_share\": 1},\n"
                        << "  {\"address\": \"unix:" << dir << "/urgent.sock\", \"priority\": \"high\"}\n"
                        << "]}\n";
  auto cleanup = [&] {
    for (const char* name : {"heavy.sock", "light.sock", "urgent.sock", "config.json"}) {
      std::remove((dir + "/" + name).c_str());
    }
    rmdir(dir.c_str());
  };
  auto host = HostSession::StartPrivate(options, {"--config", config});
  if (!host.ok()) {
    cleanup();
    return host.status();
  }
  const double scale = options.quick ? 0.2 : 1.0;
  const int latency_count = options.quick ? 50 : 300;
  auto worker = [&](const char* socket) {
    return (*host)->StartSelf({"bench", "contention", "--contention-worker"},
                              {"PVGPU_HOST=unix:" + dir + "/" + socket});
  };
  Progress progress("contention");
  progress.Step("starting guests");
  PVGPU_ASSIGN_OR_RETURN(auto heavy, worker("heavy.sock"));
  PVGPU_ASSIGN_OR_RETURN(auto light, worker("light.sock"));
  PVGPU_ASSIGN_OR_RETURN(auto urgent, worker("urgent.sock"));
  auto flood = [](SelfChild& child, double seconds) -> StatusOr<double> {
    PVGPU_ASSIGN_OR_RETURN(std::string answer, child.Ask("flood " + std::to_string(seconds)));
    return ParseCount(answer);
  };
  auto latency = [&](SelfChild& child) -> StatusOr<Latency> {
    PVGPU_ASSIGN_OR_RETURN(std::string answer,
                           child.Ask("latency " + std::to_string(latency_count)));
    return ParseLatency(answer);
  };
  // Each guest's first request also warms it up (module load, first launches).
  PVGPU_TRY(flood(*heavy, 0.1).status());
  PVGPU_TRY(flood(*light, 0.1).status());
  PVGPU_TRY(latency(*urgent).status());

  progress.Step("alone");
  const double alone_seconds = 2.0 * scale;
  PVGPU_ASSIGN_OR_RETURN(double alone, flood(*heavy, alone_seconds));

  progress.Step("fairness");
  const double together_seconds = 3.0 * scale;
  StatusOr<double> light_kernels = 0.0;
  std::thread light_thread([&] { light_kernels = flood(*light, together_seconds); });
  StatusOr<double> heavy_kernels = flood(*heavy, together_seconds);
  light_thread.join();
  PVGPU_TRY(heavy_kernels.status());
  PVGPU_TRY(light_kernels.status());

  progress.Step("latency");
  PVGPU_ASSIGN_OR_RETURN(Latency idle, latency(*urgent));
  const double flood_seconds = std::max(1.0, 4.0 * scale);
  StatusOr<double> background = 0.0;
  std::thread flood_thread([&] { background = flood(*light, flood_seconds); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  StatusOr<Latency> loaded_high = latency(*urgent);
  StatusOr<Latency> loaded_normal = latency(*heavy);
  flood_thread.join();
  PVGPU_TRY(background.status());
  PVGPU_TRY(loaded_high.status());
  PVGPU_TRY(loaded_normal.status());
  PVGPU_TRY(heavy->Finish());
  PVGPU_TRY(light->Finish());
  PVGPU_TRY(urgent->Finish());
  (*host)->Stop();
  cleanup();

  const double ratio = *light_kernels > 0 ? *heavy_kernels / *light_kernels : 0;
  const double alone_rate = alone / alone_seconds;
  const double together_rate = (*heavy_kernels + *light_kernels) / together_seconds;
  BenchReport report;
  report.json = nlohmann::ordered_json{
      {"benchmark", "contention"},
      {"machine", MachineJson()},
      {"kernel", {{"name", "bench_spin"}, {"blocks", kFloodBlocks}, {"threads", 64},
                  {"iters", kSpinIters}}},
      {"alone", {{"seconds", alone_seconds}, {"kernels", alone},
                 {"kernels_per_second", alone_rate}}},
      {"fairness", {{"seconds", together_seconds}, {"shares", {3, 1}},
                    {"kernels", {*heavy_kernels, *light_kernels}}, {"ratio", ratio},
                    {"expected_ratio", 3.0},
                    {"total_kernels_per_second", together_rate},
                    {"total_vs_alone", alone_rate > 0 ? together_rate / alone_rate : 0}}},
      {"latency_us", {{"launches", latency_count},
                      {"high_idle", {{"median", idle.median}, {"p90", idle.p90}}},
                      {"high_under_flood",
                       {{"median", loaded_high->median}, {"p90", loaded_high->p90}}},
                      {"normal_under_flood",
                       {{"median", loaded_normal->median}, {"p90", loaded_normal->p90}}},
                      {"high_flood_vs_idle",
                       idle.median > 0 ? loaded_high->median / idle.median : 0}}}};
  char text[2048];
  std::snprintf(
      text, sizeof(text),
      "pvgpu bench contention: one cpu adapter, guests on listeners of shares 3 and 1 and of\n"
      "high priority; kernels of %u blocks x 64 threads\n\n"
      "  lone guest                      %10.1f kernels/s\n"
      "  shares 3 : 1 together           %10.0f : %.0f kernels in %.1f s   ratio %.2f (expected 3)\n"
      "  adapter total, contended        %10.1f kernels/s (%.2f x the lone guest's)\n\n"
      "  launch + synchronize (us)           median      p90\n"
      "  high priority, idle             %10.1f %8.1f\n"
      "  high priority, under a flood    %10.1f %8.1f   (%.2f x idle)\n"
      "  normal priority, under a flood  %10.1f %8.1f\n",
      kFloodBlocks, alone_rate, *heavy_kernels, *light_kernels, together_seconds, ratio,
      together_rate, alone_rate > 0 ? together_rate / alone_rate : 0, idle.median, idle.p90,
      loaded_high->median, loaded_high->p90,
      idle.median > 0 ? loaded_high->median / idle.median : 0, loaded_normal->median,
      loaded_normal->p90);
  report.table = text;
  return report;
}

}  // namespace pvgpu::tools::bench
