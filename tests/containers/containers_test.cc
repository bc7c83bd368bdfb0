// Containers get exactly the GPUs and memory they are given, checked with real parts:
// a pvgpud with two cpu adapters and per-device sockets (64 MiB quota per session), the spec
// `pvgpu cdi generate` writes for it, podman, and a root filesystem holding only the test
// programs and their C libraries. Every CUDA and NVML library a container uses comes from the
// spec's mounts.
//
// Exits 77 (SKIPPED for CTest) with the reason when podman cannot run containers here.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "harness.h"
#include "tools/cdi_spec.h"

namespace pvgpu::containers {
namespace {

using nlohmann::json;

constexpr int kSkipped = 77;
constexpr uint64_t kQuota = 64ull << 20;
const char* const kProbe = "/opt/pvgpu-test/container_probe";
const char* const kSaxpy = "/opt/pvgpu-test/saxpy_drv";

// Shared by every test: one host, one spec, one root filesystem.
struct World {
  std::string dir;     // temporary: sockets, logs, root filesystem
  std::string rootfs;  // dir/rootfs
  std::string kind;    // unique per run, so that parallel runs' specs never conflict
  std::string spec_path;
  std::unique_ptr<Daemon> daemon;
  json spec;
  std::vector<std::string> uuids;  // by host adapter index
};
World* world = nullptr;

std::string Uuid(int index) { return world->uuids.at(static_cast<size_t>(index)); }

// RUNTIME_PROGRAMS: host paths of the CUDA runtime programs, ':'-separated (may be empty).
std::vector<std::string> RuntimePrograms() {
  std::vector<std::string> programs;
  std::string list = RUNTIME_PROGRAMS;
  for (size_t start = 0; start < list.size();) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) programs.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return programs;
}

Outcome InContainer(const std::vector<std::string>& devices,
                    const std::vector<std::string>& command, std::vector<std::string> extra = {}) {
  for (const std::string& device : devices) {
    extra.push_back("--device");
    extra.push_back(world->kind + "=" + device);
  }
  return RunCommand(PodmanRun(world->rootfs, extra, command));
}

TEST(Cdi, GeneratedSpecHasTheSchemasRequiredFields) {
  EXPECT_TRUE(tools::ValidateCdiSpec(world->spec).ok());
  EXPECT_EQ(world->spec["kind"], world->kind);
  std::set<std::string> names;
  for (const json& device : world->spec["devices"]) names.insert(device["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"0", "1", Uuid(0), Uuid(1), "all"}));

  // Without --kind and --output: the default kind, on stdout.
  Outcome generated =
      RunCommand({PVGPU_BINARY, "cdi", "generate", "--host", "unix:" + world->dir + "/admin.sock"});
  ASSERT_EQ(generated.exit_code, 0) << generated.output;
  // The spec (stdout) is the lines from "{" to "}"; warnings and notes (stderr) surround it.
  const std::string& out = generated.output;
  const size_t start = out.rfind("{\n", 0) == 0 ? 0 : out.find("\n{\n") + 1;
  const size_t end = out.find("\n}\n", start);
  ASSERT_NE(end, std::string::npos) << out;
  json spec = json::parse(out.substr(start, end + 2 - start));
  EXPECT_EQ(spec["kind"], "pvgpu.dev/gpu");
  EXPECT_TRUE(tools::ValidateCdiSpec(spec).ok());
  EXPECT_NE(generated.output.find("/etc/cdi"), std::string::npos) << "no install hint";
}

TEST(Cdi, SpecFromAContainerSocketIsRefused) {
  Outcome generated = RunCommand(
      {PVGPU_BINARY, "cdi", "generate", "--host", "unix:" + world->dir + "/devices/gpu-0.sock"});
  EXPECT_EQ(generated.exit_code, 1);
  EXPECT_NE(generated.output.find("admin socket"), std::string::npos) << generated.output;
}

TEST(Containers, OneDeviceRunsCudaAndSeesOnlyThatDevice) {
  Outcome devices = InContainer({"0"}, {kProbe, "devices"});
  ASSERT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_EQ(LineStartingWith(devices.output, "cuInit"), "cuInit 0") << devices.output;
  EXPECT_EQ(LineStartingWith(devices.output, "count"), "count 1 (result 0)") << devices.output;
  EXPECT_EQ(LineStartingWith(devices.output, "device 0"),
            "device 0 " + Uuid(0) + " total " + std::to_string(kQuota))
      << devices.output;

  Outcome saxpy = InContainer({"0"}, {kSaxpy});
  EXPECT_EQ(saxpy.exit_code, 0) << saxpy.output;
}

// Programs built on NVIDIA's CUDA runtime (static cudart, as nvcc links it) need nothing in the
// container but their C and C++ libraries and the spec's libcuda.so.1.
TEST(Containers, CudaRuntimeProgramsRunOnOneDevice) {
  if (RuntimePrograms().empty()) GTEST_SKIP() << "nvcc was not found at build time";
  for (const std::string& program : RuntimePrograms()) {
    const std::string inside =
        "/opt/pvgpu-test/" + std::filesystem::path(program).filename().string();
    Outcome run = InContainer({"1"}, {inside});
    EXPECT_EQ(run.exit_code, 0) << inside << ":\n" << run.output;
  }
}

TEST(Containers, DeviceByUuidIsThatAdapter) {
  Outcome devices = InContainer({Uuid(1)}, {kProbe, "devices"});
  ASSERT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_EQ(LineStartingWith(devices.output, "count"), "count 1 (result 0)") << devices.output;
  EXPECT_NE(LineStartingWith(devices.output, "device 0 " + Uuid(1)), "") << devices.output;
}

TEST(Containers, NvmlSeesOnlyThatDeviceWithTheQuotaAsTotalMemory) {
  if (access((std::string(GUEST_LIB_DIR) + "/libnvidia-ml.so.1").c_str(), R_OK) != 0) {
    GTEST_SKIP() << GUEST_LIB_DIR
        "/libnvidia-ml.so.1 is not built (yet), so the spec mounts "
        "no NVML library";
  }
  Outcome nvml = InContainer({"1"}, {kProbe, "nvml"});
  ASSERT_EQ(nvml.exit_code, 0) << nvml.output;
  EXPECT_EQ(LineStartingWith(nvml.output, "nvmlInit"), "nvmlInit 0") << nvml.output;
  EXPECT_EQ(LineStartingWith(nvml.output, "nvml count"), "nvml count 1 (result 0)") << nvml.output;
  EXPECT_EQ(LineStartingWith(nvml.output, "nvml device 0"),
            "nvml device 0 " + Uuid(1) + " total " + std::to_string(kQuota))
      << nvml.output;
}

TEST(Containers, TwoDevicesAreSeenInOrder) {
  Outcome devices = InContainer({"1", "0"}, {kProbe, "devices"});
  ASSERT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_EQ(LineStartingWith(devices.output, "count"), "count 2 (result 0)") << devices.output;
  // Natural order of the socket names, whatever order the devices were given in.
  EXPECT_NE(LineStartingWith(devices.output, "device 0 " + Uuid(0)), "") << devices.output;
  EXPECT_NE(LineStartingWith(devices.output, "device 1 " + Uuid(1)), "") << devices.output;
}

TEST(Containers, AllSeesEveryAdapter) {
  Outcome devices = InContainer({"all"}, {kProbe, "devices"});
  ASSERT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_EQ(LineStartingWith(devices.output, "count"), "count 2 (result 0)") << devices.output;
  EXPECT_NE(LineStartingWith(devices.output, "device 0 " + Uuid(0)), "") << devices.output;
  EXPECT_NE(LineStartingWith(devices.output, "device 1 " + Uuid(1)), "") << devices.output;
  Outcome saxpy = InContainer({"all"}, {kSaxpy});
  EXPECT_EQ(saxpy.exit_code, 0) << saxpy.output;
}

TEST(Containers, QuotaStopsOneContainerWhileOthersKeepWorking) {
  // Holds its memory (up to the quota) until its stdin closes.
  Background greedy(PodmanRun(world->rootfs, {"-i", "--device", world->kind + "=1"},
                              {kProbe, "alloc", "16", "hold"}));
  const std::string error = greedy.WaitForLine("alloc_error");
  EXPECT_EQ(error, "alloc_error 2") << "expected CUDA_ERROR_OUT_OF_MEMORY";

  // Meanwhile, on the same adapter and on the other one, other containers run normally.
  Outcome same_adapter = InContainer({"1"}, {kSaxpy});
  EXPECT_EQ(same_adapter.exit_code, 0) << same_adapter.output;
  Outcome other_adapter = InContainer({"0"}, {kSaxpy});
  EXPECT_EQ(other_adapter.exit_code, 0) << other_adapter.output;

  Outcome finished = greedy.Finish();
  EXPECT_EQ(finished.exit_code, 0) << finished.output;
  EXPECT_EQ(LineStartingWith(finished.output, "meminfo"), "meminfo total " + std::to_string(kQuota))
      << finished.output;
  EXPECT_EQ(LineStartingWith(finished.output, "allocated"),
            "allocated " + std::to_string(kQuota / (16 << 20)))
      << finished.output;
}

TEST(Containers, WithoutADeviceThereIsNoGpu) {
  // The libraries are in the image here (not mounted by CDI), as a CUDA image would have them.
  Outcome devices = RunCommand(
      PodmanRun(world->rootfs, {"-e", "LD_LIBRARY_PATH=/opt/pvgpu-lib"}, {kProbe, "devices"}));
  ASSERT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_EQ(LineStartingWith(devices.output, "cuInit"), "cuInit 100")
      << "expected CUDA_ERROR_NO_DEVICE\n"
      << devices.output;
}

TEST(Containers, EnvironmentCannotWidenAccess) {
  // The spec's own PVGPU_HOST wins over `-e`, and either way only the given socket exists.
  Outcome overridden = InContainer({"0"}, {kProbe, "devices"},
                                   {"-e", "PVGPU_HOST=unix:/run/pvgpu/devices/all.sock"});
  ASSERT_EQ(overridden.exit_code, 0) << overridden.output;
  EXPECT_EQ(LineStartingWith(overridden.output, "count"), "count 1 (result 0)")
      << overridden.output;
  EXPECT_NE(LineStartingWith(overridden.output, "device 0 " + Uuid(0)), "") << overridden.output;

  // A process inside setting PVGPU_HOST to the admin socket's host path, to sockets of devices
  // it was not given, or to the default socket reaches nothing.
  for (const std::string& host :
       {"unix:" + world->dir + "/admin.sock", std::string("unix:/run/pvgpu/devices/all.sock"),
        std::string("unix:/run/pvgpu/devices/gpu-1.sock"),
        std::string("unix:/run/pvgpu/pvgpud.sock")}) {
    Outcome devices = InContainer({"0"}, {kProbe, "devices", host});
    ASSERT_EQ(devices.exit_code, 0) << devices.output;
    EXPECT_EQ(LineStartingWith(devices.output, "cuInit"), "cuInit 100")
        << "PVGPU_HOST=" << host << "\n"
        << devices.output;
  }
}

// --config end to end: listeners from a file, a spec from them, and the file's quota enforced.
TEST(Containers, ConfigFileListenersAndQuota) {
  const std::string dir = world->dir + "/cfg";
  mkdir(dir.c_str(), 0700);
  {
    std::FILE* file = std::fopen((dir + "/host.json").c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fprintf(file, R"({"adapters": "cpu:memory=128M,cpu:memory=128M", "listeners": [
      {"address": "unix:%s/admin.sock", "admin": true},
      {"address": "unix:%s/second.sock", "adapters": [1], "memory_quota": "32M"}]})",
                 dir.c_str(), dir.c_str());
    std::fclose(file);
  }
  Daemon daemon(PVGPUD_BINARY, dir, {"--config", dir + "/host.json", "--threads", "2"});
  ASSERT_EQ(daemon.error(), "");
  const std::string kind = "pvgpu-cfg-" + std::to_string(getpid()) + ".dev/gpu";
  const std::string spec_path = "/var/run/cdi/pvgpu-cfg-" + std::to_string(getpid()) + ".json";
  Outcome generated =
      RunCommand({PVGPU_BINARY, "cdi", "generate", "--host", "unix:" + dir + "/admin.sock",
                  "--kind", kind, "--output", spec_path});
  ASSERT_EQ(generated.exit_code, 0) << generated.output;
  // Adapter 0 has no socket of its own: left out, with a warning; adapter 1 is device "1".
  EXPECT_NE(generated.output.find("adapter 0"), std::string::npos) << generated.output;
  Outcome alloc =
      RunCommand(PodmanRun(world->rootfs, {"--device", kind + "=1"}, {kProbe, "alloc", "8"}));
  std::remove(spec_path.c_str());
  ASSERT_EQ(alloc.exit_code, 0) << alloc.output;
  EXPECT_EQ(LineStartingWith(alloc.output, "allocated"), "allocated 4") << alloc.output;
  EXPECT_EQ(LineStartingWith(alloc.output, "alloc_error"), "alloc_error 2") << alloc.output;
}

TEST(Containers, BadConfigFileIsRefusedWithItsReason) {
  const std::string path = world->dir + "/bad.json";
  {
    std::FILE* file = std::fopen(path.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs(R"({"listeners": [{"address": "unix:/tmp/x.sock", "memory_qouta": "1G"}]})", file);
    std::fclose(file);
  }
  Outcome outcome = RunCommand({PVGPUD_BINARY, "--config", path});
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.output.find("unknown key \"memory_qouta\""), std::string::npos)
      << outcome.output;
}

// Builds the world; returns a reason to skip, or throws on a failure of ours.
std::string SetUpWorld() {
  char dir_template[] = "/tmp/pvgpu-containers-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return "cannot create a temporary directory";
  world->dir = dir_template;
  world->rootfs = world->dir + "/rootfs";
  std::vector<std::string> make_rootfs = {
      MAKE_ROOTFS,  world->rootfs, "--lib",  GUEST_LIB_DIR "/libcuda.so.1",
      PROBE_BINARY, SAXPY_BINARY,  SAXPY_PTX};
  for (const std::string& program : RuntimePrograms()) make_rootfs.push_back(program);
  Outcome assembled = RunCommand(make_rootfs);
  if (assembled.exit_code != 0) throw std::runtime_error("make_rootfs: " + assembled.output);
  std::string reason = PodmanUnavailableReason(world->rootfs);
  if (!reason.empty()) return reason;

  world->daemon = std::make_unique<Daemon>(
      PVGPUD_BINARY, world->dir,
      std::vector<std::string>{"--adapters", "cpu,cpu", "--memory", "256M", "--threads", "2",
                               "--quota", "64M", "--listen", "unix:" + world->dir + "/admin.sock",
                               "--device-sockets", world->dir + "/devices"});
  if (!world->daemon->error().empty()) throw std::runtime_error(world->daemon->error());

  world->kind = "pvgpu-test-" + std::to_string(getpid()) + ".dev/gpu";
  mkdir("/var/run/cdi", 0755);
  world->spec_path = "/var/run/cdi/pvgpu-test-" + std::to_string(getpid()) + ".json";
  Outcome generated =
      RunCommand({PVGPU_BINARY, "cdi", "generate", "--host", "unix:" + world->dir + "/admin.sock",
                  "--kind", world->kind, "--output", world->spec_path});
  if (generated.exit_code != 0) throw std::runtime_error("cdi generate: " + generated.output);
  world->spec = json::parse(ReadFile(world->spec_path));
  // A UUID-named device has the same edits as its index-named twin.
  for (const std::string index : {"0", "1"}) {
    const json* by_index = nullptr;
    for (const json& device : world->spec["devices"]) {
      if (device["name"] == index) by_index = &device;
    }
    if (by_index == nullptr) throw std::runtime_error("spec lacks device " + index);
    for (const json& device : world->spec["devices"]) {
      const std::string name = device["name"];
      if (name.rfind("GPU-", 0) == 0 && device["containerEdits"] == (*by_index)["containerEdits"]) {
        world->uuids.push_back(name);
      }
    }
  }
  if (world->uuids.size() != 2) throw std::runtime_error("spec lacks UUID devices");
  return "";
}

}  // namespace
}  // namespace pvgpu::containers

int main(int argc, char** argv) {
  using namespace pvgpu::containers;
  testing::InitGoogleTest(&argc, argv);
  world = new World();
  int result;
  try {
    const std::string skip = SetUpWorld();
    if (!skip.empty()) {
      std::printf("SKIPPED: %s\n", skip.c_str());
      result = kSkipped;
    } else {
      result = RUN_ALL_TESTS();
    }
  } catch (const std::exception& error) {
    std::printf("FAILED to set up the container tests: %s\n", error.what());
    result = 1;
  }
  if (!world->spec_path.empty()) std::remove(world->spec_path.c_str());
  world->daemon.reset();
  // Kept after a failure, for its pvgpud.log.
  if (!world->dir.empty() && result != 1) std::filesystem::remove_all(world->dir);
  return result;
}
