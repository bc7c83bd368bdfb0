// pvgpud: the pvgpu host daemon. Owns the adapters, accepts guests on its listeners and serves
// each in its own session.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "adapters/registry.h"
#include "common/log.h"
#include "common/paths.h"
#include "host/config.h"
#include "host/metrics_endpoint.h"
#include "host/server.h"
#include "host/version.h"
#include "ptx/ptx.h"

namespace {

struct Options {
  std::vector<std::string> listen;
  std::string adapters = "cpu";
  unsigned threads = 0;
  std::string memory;
  std::string quota;
  std::string limits;
  int ready_fd = -1;
  std::string log_file;
  std::string log_level;
  std::string engine;
  std::string config;
  std::string device_sockets;
  std::string compute_share;   // --device-sockets' sessions' weights (docs/sharing.md)
  std::string metrics_listen;  // GET /metrics (docs/metrics.md)
  bool metrics_allow_remote = false;
  bool adapters_given = false;
  std::string cuda_driver;  // cuda adapter: the host's libcuda.so.1 (docs/cuda-adapter.md)
  std::string nvml;
  std::string tls_cert;  // tls:// listeners (docs/remote.md)
  std::string tls_key;
  std::string token_file;
};

// The listeners to open: the config file's, then --listen's (admin), then --device-sockets'.
// When neither the file nor --listen names one, the default socket (admin) is opened, so the
// host's own tools (pvgpu smi, pvgpu cdi generate) still find it.
pvgpu::StatusOr<std::vector<pvgpu::host::ListenerConfig>> PlanListeners(
    const Options& options, const pvgpu::host::HostConfig& file, size_t adapter_count,
    uint64_t quota, const pvgpu::host::SessionLimits& limits) {
  using namespace pvgpu;
  std::vector<host::ListenerConfig> plan = file.listeners;
  PVGPU_TRY(host::ValidateListeners(plan, adapter_count, options.config));
  std::vector<std::string> listen = options.listen;
  if (listen.empty() && file.listeners.empty()) listen.push_back("unix:" + DefaultSocketPath());
  for (const auto& address : listen) {
    host::ListenerConfig config;
    config.address = address;
    config.memory_quota = quota;
    config.limits = limits;
    plan.push_back(config);
  }
  if (!options.compute_share.empty() && options.device_sockets.empty()) {
    return Error(Code::kInvalidValue,
                 "--compute-share sets the weights of --device-sockets' listeners; give "
                 "--device-sockets too (other listeners: \"compute_share\" in --config)");
  }
  if (!options.device_sockets.empty()) {
    std::string dir = options.device_sockets;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.empty() || dir[0] != '/') {
      return Error(Code::kInvalidValue, "--device-sockets needs an absolute directory");
    }
    auto sockets = host::DeviceSocketListeners(dir, adapter_count, quota, 0660);
    if (!options.compute_share.empty()) {
      PVGPU_TRY(host::ApplyComputeShares(options.compute_share, &sockets));
    }
    for (auto& listener : sockets) {
      listener.limits = limits;
      plan.push_back(std::move(listener));
    }
  }
  return plan;
}

int Serve(const Options& options) {
  using namespace pvgpu;
  adapters::RegistryOptions registry;
  registry.cpu_threads = options.threads;
  registry.cuda_driver = options.cuda_driver;
  registry.nvml = options.nvml;
  // The cuda adapter's loop guard refuses a pvgpu guest driver aimed at one of these.
  registry.listen_addresses = options.listen;
  if (registry.listen_addresses.empty()) {
    registry.listen_addresses.push_back("unix:" + DefaultSocketPath());
  }
  if (!options.memory.empty() &&
      !adapters::ParseByteSize(options.memory, &registry.cpu_memory_bytes)) {
    std::cerr << "pvgpud: bad --memory '" << options.memory << "' (e.g. 8G)\n";
    return 2;
  }
  uint64_t quota = 0;
  if (!options.quota.empty() && !adapters::ParseByteSize(options.quota, &quota)) {
    std::cerr << "pvgpud: bad --quota '" << options.quota << "' (e.g. 512M)\n";
    return 2;
  }
  host::SessionLimits limits;
  if (Status parsed = host::ParseSessionLimits(options.limits, &limits); !parsed.ok()) {
    std::cerr << "pvgpud: --limits: " << parsed.message() << "\n";
    return 2;
  }
  host::HostConfig file;
  if (!options.config.empty()) {
    auto loaded = host::LoadHostConfig(options.config);
    if (!loaded.ok()) {
      std::cerr << "pvgpud: " << loaded.status().message() << "\n";
      return 2;
    }
    file = std::move(loaded).value();
  }
  std::string adapter_spec = options.adapters;
  if (!file.adapters.empty()) {
    if (options.adapters_given && file.adapters != options.adapters) {
      std::cerr << "pvgpud: --adapters '" << options.adapters << "' contradicts \"adapters\": '"
                << file.adapters << "' in " << options.config << "; give one of them\n";
      return 2;
    }
    adapter_spec = file.adapters;
  }
  auto adapters = adapters::CreateAdapters(adapter_spec, registry);
  if (!adapters.ok()) {
    std::cerr << "pvgpud: " << adapters.status().message() << "\n";
    return 2;
  }
  for (size_t i = 0; i < adapters->size(); ++i) {
    const auto& info = (*adapters)[i]->info();
    PVGPU_INFO("adapter " << i << ": " << info.name << ", " << (info.total_memory >> 20) << " MiB");
  }

  // Signals are taken synchronously by the main thread; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto plan = PlanListeners(options, file, adapters->size(), quota, limits);
  if (!plan.ok()) {
    std::cerr << "pvgpud: " << plan.status().message() << "\n";
    return 2;
  }
  transport::RemoteOptions remote;
  remote.tls_cert_file = options.tls_cert;
  remote.tls_key_file = options.tls_key;
  if (!options.token_file.empty()) {
    auto token = transport::ReadRemoteToken(options.token_file);
    if (!token.ok()) {
      std::cerr << "pvgpud: --token-file: " << token.status().message() << "\n";
      return 2;
    }
    remote.token = std::move(token).value();
  }
  host::Server server(std::move(adapters).value());
  for (const auto& planned : *plan) {
    host::ListenerConfig config = planned;
    config.remote = remote;
    Status added = host::EnsureSocketDirectory(config.address);
    if (added.ok()) added = server.AddListener(config);
    if (!added.ok()) {
      std::cerr << "pvgpud: cannot listen on " << config.address << ": " << added.message() << "\n";
      return 1;
    }
  }
  std::unique_ptr<host::MetricsEndpoint> metrics;
  if (!options.metrics_listen.empty()) {
    auto started =
        host::MetricsEndpoint::Start(options.metrics_listen, options.metrics_allow_remote, &server);
    if (!started.ok()) {
      std::cerr << "pvgpud: --metrics-listen: " << started.status().message() << "\n";
      return 1;
    }
    metrics = std::move(started).value();
  }
  if (options.ready_fd >= 0) {
    // The contract with `pvgpu run`: one line once every listener accepts guests.
    (void)!write(options.ready_fd, "ready\n", 6);
    close(options.ready_fd);
  }
  PVGPU_INFO(host::kVersionString << " serving");
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  PVGPU_INFO("received " << strsignal(signal_number) << ", shutting down");
  metrics.reset();  // before the server it reads
  server.Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "pvgpud: the pvgpu host daemon. Serves the host's adapters to guest processes "
      "over a channel (local: Unix socket with shared memory)."};
  Options options;
  app.add_option("--listen", options.listen,
                 "Address to accept guests on, repeatable: unix:PATH (default unix:" +
                     pvgpu::DefaultSocketPath() +
                     "), tls://HOST:PORT (needs --tls-cert, --tls-key, --token-file) or "
                     "tcp://LOOPBACK:PORT (no TLS, no token: loopback only)");
  app.add_option("--tls-cert", options.tls_cert, "Certificate chain (PEM) of tls:// listeners")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.tls_key, "Private key (PEM) of tls:// listeners")
      ->check(CLI::ExistingFile);
  app.add_option("--token-file", options.token_file,
                 "File whose first line is the shared secret every tls:// guest must present "
                 "(at least 16 characters, e.g. from `openssl rand -hex 32`)")
      ->check(CLI::ExistingFile);
  CLI::Option* adapters_option =
      app.add_option("--adapters", options.adapters,
                     "Adapters to serve, in order: a comma-separated list of "
                     "KIND[:memory=SIZE][:engine=ENGINE]; kinds: cpu, cuda (every GPU of the "
                     "host's CUDA driver); engine= sets a cpu adapter's PTX engine (--engine)")
          ->capture_default_str();
  app.add_option("--threads", options.threads,
                 "Worker threads of the cpu adapters (0: one per CPU the daemon may use)")
      ->capture_default_str();
  app.add_option("--memory", options.memory,
                 "Device memory each cpu adapter offers, e.g. 8G (default: half of RAM)");
  app.add_option("--quota", options.quota,
                 "Device memory each guest session may hold, e.g. 512M (default: no quota)");
  app.add_option("--limits", options.limits,
                 "Objects of each kind a guest session may hold, e.g. streams=256,events=1024; "
                 "kinds: " +
                     pvgpu::host::LimitNames() +
                     " (defaults: docs/threat-model.md); for --listen and --device-sockets");
  app.add_option("--cuda-driver", options.cuda_driver,
                 "libcuda.so.1 for the cuda adapters (default: the system's, never pvgpu's own; "
                 "pvgpu's own is accepted here to chain to the pvgpud named by PVGPU_HOST)");
  app.add_option("--nvml", options.nvml,
                 "libnvidia-ml.so.1 for the cuda adapters' utilization (default: the system's)");
  app.add_option("--config", options.config,
                 "JSON file with \"adapters\" and \"listeners\" (address, adapters, "
                 "memory_quota, limits, admin, mode, compute_share, priority); see "
                 "docs/containers.md and docs/sharing.md")
      ->check(CLI::ExistingFile);
  app.add_option("--device-sockets", options.device_sockets,
                 "Also listen on DIR/gpu-<index>.sock for each adapter and DIR/all.sock, "
                 "non-admin, with --quota: the sockets `pvgpu cdi generate` gives containers");
  app.add_option("--compute-share", options.compute_share,
                 "Compute weight of --device-sockets' sessions when they compete for an adapter: "
                 "N for every socket, or gpu-<index>=N,all=N (default 1; docs/sharing.md)");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "Serve GET /metrics (Prometheus text format) on ADDR:PORT, e.g. "
                 "127.0.0.1:9400; an address other than loopback needs "
                 "--metrics-allow-remote (docs/metrics.md)");
  app.add_flag("--metrics-allow-remote", options.metrics_allow_remote,
               "Allow --metrics-listen on an address other than loopback: anyone who reaches it "
               "learns every session's name, pid and use");
  app.add_option("--ready-fd", options.ready_fd,
                 "Write \"ready\" to this descriptor once listening, then close it");
  app.add_option("--engine", options.engine,
                 "How the cpu adapters run kernels: interp (the interpreter), jit (compile each "
                 "kernel with LLVM at its first launch) or auto (compile in the background, "
                 "interpret until ready; the default where the build has LLVM); also "
                 "PVGPU_ENGINE. See docs/jit.md");
  app.add_option("--log-file", options.log_file, "Append logs to FILE instead of stderr");
  app.add_option("--log-level", options.log_level,
                 "error, warn, info, debug or trace (default: PVGPU_LOG, else info)");
  app.set_version_flag("--version", pvgpu::host::kVersionString);
  CLI11_PARSE(app, argc, argv);
  options.adapters_given = adapters_option->count() > 0;

  if (!options.log_file.empty()) setenv("PVGPU_LOG_FILE", options.log_file.c_str(), 1);
  if (!options.log_level.empty()) {
    pvgpu::log::Level level;
    if (!pvgpu::log::ParseLevel(options.log_level, &level)) {
      std::cerr << "pvgpud: bad --log-level '" << options.log_level << "'\n";
      return 2;
    }
    setenv("PVGPU_LOG", options.log_level.c_str(), 1);
  }
  if (!options.engine.empty()) {
    auto engine = pvgpu::ptx::ParseEngine(options.engine);
    if (!engine.ok()) {
      std::cerr << "pvgpud: --engine: " << engine.status().message() << "\n";
      return 2;
    }
    // Read once by the engine (ptx::DefaultEngine) at the first launch.
    setenv("PVGPU_ENGINE", pvgpu::ptx::EngineName(*engine), 1);
  }
  pvgpu::log::Init("pvgpud", pvgpu::log::Level::kInfo);
  return Serve(options);
}
