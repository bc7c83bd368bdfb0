// Round-trip latency and one-way throughput: the Unix channel (shared rings + doorbells) against
// the in-process pair. The peer echoes (ping-pong) or drains (throughput) on its own thread.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "transport/channel.h"
#include "transport/channel_benchmark_loops.h"

namespace pvgpu::transport {
namespace {

struct Pair {
  std::unique_ptr<Endpoint> client;
  std::unique_ptr<Endpoint> server;
  std::unique_ptr<UnixListener> listener;
  std::string dir;
  ~Pair() {
    client.reset();
    server.reset();
    listener.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

std::unique_ptr<Pair> MakePair(bool unix_channel) {
  auto pair = std::make_unique<Pair>();
  if (!unix_channel) {
    auto [a, b] = CreateInProcessPair(4u << 20);
    pair->client = std::move(a);
    pair->server = std::move(b);
    return pair;
  }
  char templ[] = "/tmp/pvgpu-bench-XXXXXX";
  pair->dir = ::mkdtemp(templ);
  const std::string path = pair->dir + "/s";
  pair->listener = std::move(UnixListener::Listen(path)).value();
  std::thread connect([&] { pair->client = std::move(ConnectUnix(path)).value(); });
  pair->server = std::move(pair->listener->Accept()).value();
  connect.join();
  return pair;
}

void PingPong(benchmark::State& state, bool unix_channel) {
  auto pair = MakePair(unix_channel);
  bench::PingPong(state, *pair->client, *pair->server);
}

void Throughput(benchmark::State& state, bool unix_channel) {
  auto pair = MakePair(unix_channel);
  bench::Throughput(state, *pair->client, *pair->server);
}

BENCHMARK_CAPTURE(PingPong, unix, true)->Arg(64)->Arg(4096)->UseRealTime();
BENCHMARK_CAPTURE(PingPong, inprocess, false)->Arg(64)->Arg(4096)->UseRealTime();
BENCHMARK_CAPTURE(Throughput, unix, true)->Arg(64)->Arg(65536)->Arg(1 << 20)->UseRealTime();
BENCHMARK_CAPTURE(Throughput, inprocess, false)->Arg(64)->Arg(65536)->Arg(1 << 20)->UseRealTime();

}  // namespace
}  // namespace pvgpu::transport

BENCHMARK_MAIN();
