#include "tools/bench/latency_report.h"

#include <vector>

#include "tools/bench/report.h"

namespace pvgpu::tools::bench {
namespace {

using Json = nlohmann::ordered_json;

// The JSON keys docs/benchmarks.md lists, with how each is read from one mode's figures.
struct Metric {
  const char* key;
  const char* label;
  double (*get)(const LatencyFigures&);
};

const std::vector<Metric>& Metrics() {
  static const std::vector<Metric> metrics = {
      {"launch_async_us", "launch, pipelined",
       [](const LatencyFigures& f) { return f.launch_async; }},
      {"launch_sync_us", "launch + synchronize",
       [](const LatencyFigures& f) { return f.launch_sync; }},
      {"launch_call_us", "launch call returns",
       [](const LatencyFigures& f) { return f.launch_call; }},
      {"query_us", "stream/event query (mean)",
       [](const LatencyFigures& f) { return (f.stream_query + f.event_query) / 2; }},
      {"stream_query_us", "  cuStreamQuery",
       [](const LatencyFigures& f) { return f.stream_query; }},
      {"event_query_us", "  cuEventQuery", [](const LatencyFigures& f) { return f.event_query; }},
      {"copy_small_us", "4-byte copy (mean)",
       [](const LatencyFigures& f) { return (f.copy_htod + f.copy_dtoh) / 2; }},
      {"copy_htod_small_us", "  HtoD 4 B", [](const LatencyFigures& f) { return f.copy_htod; }},
      {"copy_dtoh_small_us", "  DtoH 4 B", [](const LatencyFigures& f) { return f.copy_dtoh; }},
  };
  return metrics;
}

struct Target {
  const char* name;
  double measured;
  double limit;
  bool at_most;  // true: measured <= limit passes; false: measured >= limit passes
};

// The operations whose context switches are counted, by their JSON names.
const std::pair<const char*, double LatencyFigures::Switches::*> kSwitchKeys[] = {
    {"launch_async", &LatencyFigures::Switches::launch_async},
    {"launch_sync", &LatencyFigures::Switches::launch_sync},
    {"copy_htod_small", &LatencyFigures::Switches::copy_htod},
    {"copy_dtoh_small", &LatencyFigures::Switches::copy_dtoh},
};

}  // namespace

BenchReport MakeLatencyReport(const LatencyFigures& inprocess, const LatencyFigures& channel,
                              const LatencyFigures& unpipelined, const std::string& host,
                              int rounds) {
  BenchReport report;
  Json& json = report.json;
  json["benchmark"] = "latency";
  json["unit"] = "microseconds per operation (best of rounds)";
  json["rounds"] = rounds;
  json["host"] = host;
  json["machine"] = MachineJson();
  TextTable table({"operation (us/op)", "in-process", "channel", "PVGPU_PIPELINE=0",
                   "channel/in-process", "unpipelined/channel"});
  for (const Metric& m : Metrics()) {
    const double a = m.get(inprocess), b = m.get(channel), c = m.get(unpipelined);
    json[m.key] = Json{{"inprocess", a}, {"channel", b}, {"channel_unpipelined", c}};
    table.AddRow({m.label, FormatNumber(a, a < 0.1 ? 4 : 2), FormatNumber(b), FormatNumber(c),
                  FormatRatio(b / a), FormatRatio(c / b)});
  }

  const Target targets[] = {
      {"pipelined launch through the channel within 1.5x of in-process",
       channel.launch_async / inprocess.launch_async, 1.5, true},
      {"launch + synchronize through the channel within 3x of in-process",
       channel.launch_sync / inprocess.launch_sync, 3.0, true},
      {"pipelined launches >= 5x the throughput of PVGPU_PIPELINE=0",
       unpipelined.launch_async / channel.launch_async, 5.0, false},
  };
  json["ratios"] = Json{
      {"launch_async_channel_vs_inprocess", targets[0].measured},
      {"launch_sync_channel_vs_inprocess", targets[1].measured},
      {"launch_throughput_pipelined_vs_unpipelined", targets[2].measured},
      {"launch_call_unpipelined_vs_pipelined", unpipelined.launch_call / channel.launch_call},
      {"query_channel_vs_inprocess", (channel.stream_query + channel.event_query) /
                                         (inprocess.stream_query + inprocess.event_query)},
      {"copy_small_channel_vs_inprocess",
       (channel.copy_htod + channel.copy_dtoh) / (inprocess.copy_htod + inprocess.copy_dtoh)},
  };
  Json target_json = Json::array();
  TextTable target_table({"target", "measured", "limit", "result"});
  for (const Target& t : targets) {
    const bool pass = t.at_most ? t.measured <= t.limit : t.measured >= t.limit;
    target_json.push_back(
        Json{{"name", t.name}, {"measured", t.measured}, {"limit", t.limit}, {"pass", pass}});
    target_table.AddRow({t.name, FormatRatio(t.measured),
                         (t.at_most ? "<= " : ">= ") + FormatRatio(t.limit),
                         pass ? "pass" : "FAIL"});
  }
  json["targets"] = target_json;

  Json switch_json = Json::object();
  TextTable switch_table(
      {"context switches per operation", "in-process", "channel", "PVGPU_PIPELINE=0"});
  for (const auto& [key, field] : kSwitchKeys) {
    const double a = inprocess.switches.*field, b = channel.switches.*field,
                 c = unpipelined.switches.*field;
    switch_json[key] = Json{{"inprocess", a}, {"channel", b}, {"channel_unpipelined", c}};
    switch_table.AddRow({key, FormatNumber(a), FormatNumber(b), FormatNumber(c)});
  }
  json["context_switches_per_op"] = switch_json;
  report.table = "pvgpu bench latency: " + host + "; best of " + std::to_string(rounds) +
                 " rounds, the three modes taking turns in each\n\n" + table.Render() + "\n" +
                 target_table.Render() + "\n" + switch_table.Render() +
                 "\n'launch, pipelined' is sustained throughput (many launches, then one "
                 "synchronize); 'launch call returns'\nis the caller's time inside "
                 "cuLaunchKernel, 100 launches at a time, while the host runs them.\n"
                 "In-process queries read a completion counter, as a native driver would.\n"
                 "About one context switch per round trip means that the guest and the host "
                 "took turns on one CPU\n(see 'CPU placement' in docs/benchmarks.md; --cpus "
                 "pins both).\n";

  Plot plot;
  plot.title = "pvgpu latency by mode";
  plot.y_label = "microseconds per operation";
  plot.log_y = true;
  plot.categories = {"launch (pipelined)", "launch + sync", "query", "4-byte copy"};
  auto series = [](const char* name, const LatencyFigures& f) {
    return PlotSeries{name,
                      {f.launch_async, f.launch_sync, (f.stream_query + f.event_query) / 2,
                       (f.copy_htod + f.copy_dtoh) / 2}};
  };
  plot.series = {series("in-process", inprocess), series("channel", channel),
                 series("PVGPU_PIPELINE=0", unpipelined)};
  report.plot = plot;
  return report;
}

}  // namespace pvgpu::tools::bench
