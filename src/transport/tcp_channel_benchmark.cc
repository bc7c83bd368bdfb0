// Round-trip latency and one-way throughput of the remote channel (tcp:// and tls:// over
// loopback) against the local Unix channel, with the loops of channel_benchmark_loops.h.
// Certificates are made at start-up in a temporary directory.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "transport/channel.h"
#include "transport/channel_benchmark_loops.h"
#include "transport/tcp_test_util.h"
#include "transport/tls_test_pki.h"

namespace pvgpu::transport {
namespace {

enum class Kind { kUnix, kTcp, kTls };

struct Pair {
  std::unique_ptr<Endpoint> client;
  std::unique_ptr<Endpoint> server;
  std::unique_ptr<UnixListener> unix_listener;
  std::unique_ptr<RemoteListener> remote_listener;
};

const testing::TestPki& Pki() {
  static testing::TestPki* pki = [] {
    char templ[] = "/tmp/pvgpu-bench-pki-XXXXXX";
    static std::string dir = ::mkdtemp(templ);
    auto* made = new testing::TestPki;
    testing::MakeTestPki(dir, {"127.0.0.1"}, made);
    std::atexit([] { std::filesystem::remove_all(dir); });
    return made;
  }();
  return *pki;
}

std::unique_ptr<Pair> MakePair(Kind kind) {
  auto pair = std::make_unique<Pair>();
  if (kind == Kind::kUnix) {
    char templ[] = "/tmp/pvgpu-bench-XXXXXX";
    const std::string path = std::string(::mkdtemp(templ)) + "/s";
    pair->unix_listener = std::move(UnixListener::Listen(path)).value();
    std::thread connect([&] { pair->client = std::move(ConnectUnix(path)).value(); });
    pair->server = std::move(pair->unix_listener->Accept()).value();
    connect.join();
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
    return pair;
  }
  RemoteOptions host;
  RemoteOptions guest;
  std::string address = "tcp://127.0.0.1:0";
  if (kind == Kind::kTls) {
    address = "tls://127.0.0.1:0";
    host.tls_cert_file = Pki().host_cert;
    host.tls_key_file = Pki().host_key;
    host.token = guest.token = testing::TestToken();
    guest.tls_ca_file = Pki().ca_cert;
  }
  auto connected = testing::ConnectPair(address, host, guest);
  pair->client = std::move(connected.guest);
  pair->server = std::move(connected.host);
  pair->remote_listener = std::move(connected.listener);
  return pair;
}

void PingPong(benchmark::State& state, Kind kind) {
  auto pair = MakePair(kind);
  bench::PingPong(state, *pair->client, *pair->server);
}

void Throughput(benchmark::State& state, Kind kind) {
  auto pair = MakePair(kind);
  bench::Throughput(state, *pair->client, *pair->server);
}

BENCHMARK_CAPTURE(PingPong, unix, Kind::kUnix)->Arg(64)->Arg(4096)->UseRealTime();
BENCHMARK_CAPTURE(PingPong, tcp, Kind::kTcp)->Arg(64)->Arg(4096)->UseRealTime();
BENCHMARK_CAPTURE(PingPong, tls, Kind::kTls)->Arg(64)->Arg(4096)->UseRealTime();
BENCHMARK_CAPTURE(Throughput, unix, Kind::kUnix)->Arg(64)->Arg(1 << 20)->UseRealTime();
BENCHMARK_CAPTURE(Throughput, tcp, Kind::kTcp)->Arg(64)->Arg(1 << 20)->Arg(4 << 20)->UseRealTime();
BENCHMARK_CAPTURE(Throughput, tls, Kind::kTls)->Arg(64)->Arg(1 << 20)->Arg(4 << 20)->UseRealTime();

}  // namespace
}  // namespace pvgpu::transport

BENCHMARK_MAIN();
