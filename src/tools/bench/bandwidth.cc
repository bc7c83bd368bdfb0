// `pvgpu bench bandwidth`: host-to-device and device-to-host copy rates by transfer size, from
// pageable and from pinned memory, through the channel and on the in-process adapter, next to
// the machine's plain memcpy measured in the same run (the ceiling any copy path can reach).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "tools/bench/bench.h"
#include "tools/bench/guest_device.h"
#include "tools/bench/host_session.h"
#include "tools/bench/inprocess_device.h"
#include "tools/bench/report.h"

namespace pvgpu::tools::bench {
namespace {

using Json = nlohmann::ordered_json;

std::vector<uint64_t> Sizes(bool quick) {
  std::vector<uint64_t> sizes;
  for (uint64_t size = 4 << 10; size <= (quick ? 1u << 20 : 256u << 20); size *= 4) {
    sizes.push_back(size);
  }
  return sizes;
}

// Repetitions at `size`: about `budget` bytes in all, at least 2, so big sizes cost a few
// copies and small ones are not dominated by the clock.
int Repetitions(uint64_t size, bool quick) {
  const uint64_t budget = quick ? (2u << 20) : (64u << 20);
  return static_cast<int>(std::clamp<uint64_t>(budget / size, 2, 2000));
}

// GB/s (1e9 bytes per second) of `copy` run at every size.
StatusOr<std::vector<double>> Rates(const std::vector<uint64_t>& sizes, bool quick,
                                    const std::function<Status(uint64_t, int)>& copy) {
  std::vector<double> rates;
  for (uint64_t size : sizes) {
    const int reps = Repetitions(size, quick);
    const Clock::time_point start = Clock::now();
    PVGPU_TRY(copy(size, reps));
    rates.push_back(static_cast<double>(size) * reps / SecondsSince(start) / 1e9);
  }
  return rates;
}

struct Column {
  std::string key;    // JSON
  std::string label;  // table and chart
  std::vector<double> rates;
};

// HtoD and DtoH columns for `device`, copying from `host` (pageable or pinned, at least the
// largest size). HtoD ends with a synchronize: the copies count once they have arrived.
Status MeasureDevice(Device& device, uint8_t* host, const std::vector<uint64_t>& sizes, bool quick,
                     const std::string& key, const std::string& label,
                     std::vector<Column>* columns) {
  const uint64_t largest = sizes.back();
  PVGPU_ASSIGN_OR_RETURN(uint64_t buffer, device.Allocate(largest));
  // One untimed round at the largest size faults in the memory on both sides.
  PVGPU_TRY(device.Upload(buffer, host, largest));
  PVGPU_TRY(device.Download(host, buffer, largest));
  PVGPU_TRY(device.Synchronize());
  PVGPU_ASSIGN_OR_RETURN(auto htod, Rates(sizes, quick, [&](uint64_t size, int reps) -> Status {
                           for (int r = 0; r < reps; ++r)
                             PVGPU_TRY(device.Upload(buffer, host, size));
                           return device.Synchronize();
                         }));
  PVGPU_ASSIGN_OR_RETURN(auto dtoh, Rates(sizes, quick, [&](uint64_t size, int reps) -> Status {
                           for (int r = 0; r < reps; ++r)
                             PVGPU_TRY(device.Download(host, buffer, size));
                           return Status::Ok();
                         }));
  columns->push_back({"htod_" + key, "HtoD " + label, std::move(htod)});
  columns->push_back({"dtoh_" + key, "DtoH " + label, std::move(dtoh)});
  return device.Free(buffer);
}

}  // namespace

StatusOr<BenchReport> RunBandwidth(const BenchOptions& options) {
  const std::vector<uint64_t> sizes = Sizes(options.quick);
  const uint64_t largest = sizes.back();
  std::vector<uint8_t> pageable(largest), scratch(largest);
  for (uint64_t i = 0; i < largest; ++i) pageable[i] = static_cast<uint8_t>(i * 131);
  std::memset(scratch.data(), 0, largest);
  Progress progress("bandwidth");
  std::vector<Column> columns;

  progress.Step("memcpy");
  PVGPU_ASSIGN_OR_RETURN(auto memcpy_rates,
                         Rates(sizes, options.quick, [&](uint64_t size, int reps) -> Status {
                           for (int r = 0; r < reps; ++r) {
                             std::memcpy(scratch.data(), pageable.data(), size);
                             // Keeps the compiler from dropping copies nobody reads.
                             asm volatile("" : : "r"(scratch.data()) : "memory");
                           }
                           return Status::Ok();
                         }));
  columns.push_back({"memcpy", "memcpy", std::move(memcpy_rates)});

  progress.Step("in-process adapter");
  {
    PVGPU_ASSIGN_OR_RETURN(auto device, InprocessDevice::Open());
    PVGPU_TRY(MeasureDevice(*device, pageable.data(), sizes, options.quick, "inprocess",
                            "in-process", &columns));
  }

  PVGPU_ASSIGN_OR_RETURN(auto host, HostSession::Start(options));
  PVGPU_ASSIGN_OR_RETURN(auto device, GuestDevice::Open(host->guest_library()));
  progress.Step("channel, pageable");
  PVGPU_TRY(MeasureDevice(*device, pageable.data(), sizes, options.quick, "pageable", "pageable",
                          &columns));
  // Pinned memory: optional in the guest library. Missing or refused means "n/a", not failure.
  std::string pinned_status = "available";
  const DriverApi& api = device->api();
  void* pinned = nullptr;
  if (api.cuMemAllocHost_v2 == nullptr) {
    pinned_status = "n/a: the guest library has no cuMemAllocHost";
  } else if (CUresult r = api.cuMemAllocHost_v2(&pinned, largest); r != CUDA_SUCCESS) {
    pinned_status = "n/a: cuMemAllocHost: " + api.Check(r, "cuMemAllocHost").message();
    pinned = nullptr;
  }
  if (pinned != nullptr) {
    progress.Step("channel, pinned");
    std::memcpy(pinned, pageable.data(), largest);
    PVGPU_TRY(MeasureDevice(*device, static_cast<uint8_t*>(pinned), sizes, options.quick, "pinned",
                            "pinned", &columns));
    (void)api.cuMemFreeHost(pinned);
  } else {
    columns.push_back({"htod_pinned", "HtoD pinned", std::vector<double>(sizes.size(), NAN)});
    columns.push_back({"dtoh_pinned", "DtoH pinned", std::vector<double>(sizes.size(), NAN)});
  }
  const std::string address = host->is_private() ? "private pvgpud" : host->address();
  device.reset();
  host->Stop();

  BenchReport report;
  Json& json = report.json;
  json["benchmark"] = "bandwidth";
  json["unit"] = "GB/s (1e9 bytes per second)";
  json["host"] = address;
  json["machine"] = MachineJson();
  json["pinned"] = pinned_status;
  std::vector<std::string> header = {"size"};
  for (const Column& c : columns) header.push_back(c.label);
  TextTable table(header);
  Json rows = Json::array();
  Plot plot;
  plot.title = "pvgpu copy bandwidth by size";
  plot.y_label = "GB/s";
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<std::string> row = {FormatBytes(sizes[i])};
    Json entry = Json{{"bytes", sizes[i]}};
    for (const Column& c : columns) {
      row.push_back(FormatNumber(c.rates[i], 2));
      entry[c.key] = std::isnan(c.rates[i]) ? Json(nullptr) : Json(c.rates[i]);
    }
    table.AddRow(row);
    rows.push_back(entry);
    plot.categories.push_back(FormatBytes(sizes[i]));
  }
  for (const Column& c : columns) plot.series.push_back({c.label, c.rates});
  json["sizes"] = sizes;
  json["rows"] = rows;

  // The target docs/benchmarks.md states, at the largest size (steady state, out of the caches).
  const double memcpy_rate = columns[0].rates.back();
  const double pinned_rate = columns[columns.size() - 2].rates.back();
  const double fraction = pinned_rate / memcpy_rate;
  const bool measured = !std::isnan(fraction);
  json["targets"] = Json::array({Json{{"name", "pinned HtoD >= 50% of memcpy bandwidth"},
                                      {"bytes", largest},
                                      {"measured", measured ? Json(fraction) : Json(nullptr)},
                                      {"limit", 0.5},
                                      {"pass", measured ? Json(fraction >= 0.5) : Json(nullptr)}}});
  report.table =
      "pvgpu bench bandwidth (GB/s): host " + address + "; pinned memory " + pinned_status +
      "\n\n" + table.Render() + "\npinned HtoD at " + FormatBytes(largest) + ": " +
      (measured ? FormatNumber(fraction * 100, 1) +
                      "% of memcpy (target >= 50%): " + (fraction >= 0.5 ? "pass" : "FAIL")
                : std::string("n/a")) +
      "\n";
  report.plot = plot;
  report.line_plot = true;
  return report;
}

}  // namespace pvgpu::tools::bench
