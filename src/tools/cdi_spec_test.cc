#include "tools/cdi_spec.h"

#include <gtest/gtest.h>

namespace pvgpu::tools {
namespace {

using nlohmann::json;

const char* const kUuid0 = "GPU-00000000-0000-0000-0000-000000000000";
const char* const kUuid1 = "GPU-11111111-1111-1111-1111-111111111111";

// HostStatus as an admin session of a two-adapter host started with --device-sockets sees it.
json TwoAdapterHost() {
  return json::parse(R"({
    "adapters": [
      {"index": 0, "host_index": 0, "uuid": "GPU-00000000-0000-0000-0000-000000000000"},
      {"index": 1, "host_index": 1, "uuid": "GPU-11111111-1111-1111-1111-111111111111"}],
    "listeners": [
      {"address": "unix:/run/pvgpu/pvgpud.sock", "adapters": [0, 1], "admin": true},
      {"address": "unix:/srv/d/gpu-0.sock", "adapters": [0], "admin": false},
      {"address": "unix:/srv/d/gpu-1.sock", "adapters": [1], "admin": false},
      {"address": "unix:/srv/d/all.sock", "adapters": [1, 0], "admin": false}]})");
}

const json* Device(const json& spec, const std::string& name) {
  for (const json& device : spec["devices"]) {
    if (device["name"] == name) return &device;
  }
  return nullptr;
}

std::pair<std::string, std::string> OnlyMount(const json& device) {
  const json& mounts = device["containerEdits"]["mounts"];
  EXPECT_EQ(mounts.size(), 1u) << device.dump();
  return {mounts[0]["hostPath"], mounts[0]["containerPath"]};
}

TEST(CdiSpec, OneDevicePerAdapterByIndexAndUuidPlusAll) {
  CdiOptions options;
  options.libraries = {"/opt/pvgpu/lib/pvgpu/libcuda.so.1",
                       "/opt/pvgpu/lib/pvgpu/libnvidia-ml.so.1"};
  auto built = BuildCdiSpec(TwoAdapterHost(), options);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& spec = built->spec;
  EXPECT_TRUE(built->warnings.empty());
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "pvgpu.dev/gpu");
  ASSERT_EQ(spec["devices"].size(), 5u);

  using Mount = std::pair<std::string, std::string>;
  EXPECT_EQ(OnlyMount(*Device(spec, "0")),
            Mount("/srv/d/gpu-0.sock", "/run/pvgpu/devices/gpu-0.sock"));
  EXPECT_EQ(OnlyMount(*Device(spec, kUuid0)), OnlyMount(*Device(spec, "0")));
  EXPECT_EQ(OnlyMount(*Device(spec, "1")),
            Mount("/srv/d/gpu-1.sock", "/run/pvgpu/devices/gpu-1.sock"));
  EXPECT_EQ(OnlyMount(*Device(spec, kUuid1)), OnlyMount(*Device(spec, "1")));
  // The admin socket is never handed out, even though it serves every adapter.
  EXPECT_EQ(OnlyMount(*Device(spec, "all")),
            Mount("/srv/d/all.sock", "/run/pvgpu/devices/all.sock"));
  for (const json& device : spec["devices"]) {
    EXPECT_FALSE(device["containerEdits"].contains("env")) << "per-device env would conflict";
  }

  const json& edits = spec["containerEdits"];
  EXPECT_EQ(edits["env"], json::array({"PVGPU_HOST=dir:/run/pvgpu/devices"}));
  std::set<std::string> targets;
  for (const json& mount : edits["mounts"]) {
    targets.insert(mount["containerPath"]);
    EXPECT_NE(std::find(mount["options"].begin(), mount["options"].end(), "ro"),
              mount["options"].end());
  }
  for (const std::string& dir : ContainerLibraryDirs()) {
    EXPECT_EQ(targets.count(dir + "/libcuda.so.1"), 1u);
    EXPECT_EQ(targets.count(dir + "/libnvidia-ml.so.1"), 1u);
  }
  EXPECT_TRUE(ValidateCdiSpec(spec).ok());
}

TEST(CdiSpec, OptionsChangeKindAndDeviceRoot) {
  CdiOptions options;
  options.kind = "example.com/accel";
  options.device_root = "/dev/pvgpu";
  auto built = BuildCdiSpec(TwoAdapterHost(), options);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->spec["kind"], "example.com/accel");
  EXPECT_EQ(OnlyMount(*Device(built->spec, "1")).second, "/dev/pvgpu/gpu-1.sock");
  EXPECT_EQ(built->spec["containerEdits"]["env"][0], "PVGPU_HOST=dir:/dev/pvgpu");
}

TEST(CdiSpec, OneAdapterHostSharesThePlaceOfAll) {
  json host = json::parse(R"({
    "adapters": [{"host_index": 0, "uuid": "GPU-00000000-0000-0000-0000-000000000000"}],
    "listeners": [{"address": "unix:/srv/d/gpu-0.sock", "adapters": [0], "admin": false},
                  {"address": "unix:/srv/d/all.sock", "adapters": [0], "admin": false}]})");
  auto built = BuildCdiSpec(host, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(OnlyMount(*Device(built->spec, "all")), OnlyMount(*Device(built->spec, "0")));
}

TEST(CdiSpec, AdaptersWithoutTheirOwnListenerAreLeftOutWithAWarning) {
  json host = TwoAdapterHost();
  host["listeners"].erase(2);  // gpu-1.sock
  auto built = BuildCdiSpec(host, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(Device(built->spec, "1"), nullptr);
  EXPECT_NE(Device(built->spec, "all"), nullptr);
  ASSERT_EQ(built->warnings.size(), 1u);
  EXPECT_NE(built->warnings[0].find("adapter 1"), std::string::npos);
}

TEST(CdiSpec, ErrorsNameTheFix) {
  json admin_only = TwoAdapterHost();
  admin_only["listeners"] = json::array({admin_only["listeners"][0]});
  auto built = BuildCdiSpec(admin_only, {});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("--device-sockets"), std::string::npos);

  json container_view = TwoAdapterHost();
  container_view.erase("listeners");  // what a non-admin session is told
  built = BuildCdiSpec(container_view, {});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("admin socket"), std::string::npos);
}

// The CDI schema's required fields and shapes.
TEST(CdiSpec, ValidatorRejectsWhatTheSchemaRejects) {
  auto built = BuildCdiSpec(TwoAdapterHost(), {});
  ASSERT_TRUE(built.ok());
  const json good = built->spec;
  ASSERT_TRUE(ValidateCdiSpec(good).ok());
  auto rejects = [&](const std::function<void(json&)>& change, const std::string& expected) {
    json spec = good;
    change(spec);
    Status status = ValidateCdiSpec(spec);
    EXPECT_FALSE(status.ok()) << spec.dump();
    EXPECT_NE(status.message().find(expected), std::string::npos) << status.message();
  };
  rejects([](json& s) { s.erase("cdiVersion"); }, "cdiVersion");
  rejects([](json& s) { s["cdiVersion"] = "0.5"; }, "MAJOR.MINOR.PATCH");
  rejects([](json& s) { s.erase("kind"); }, "\"kind\"");
  rejects([](json& s) { s["kind"] = "gpu"; }, "VENDOR/CLASS");
  rejects([](json& s) { s["kind"] = "pvgpu.dev/g.pu"; }, "VENDOR/CLASS");
  rejects([](json& s) { s["devices"] = json::array(); }, "non-empty");
  rejects([](json& s) { s["devices"][0].erase("name"); }, "lacks \"name\"");
  rejects([](json& s) { s["devices"][0]["name"] = "-x"; }, "not valid");
  rejects([](json& s) { s["devices"][1]["name"] = "0"; }, "listed twice");
  rejects([](json& s) { s["devices"][0].erase("containerEdits"); }, "lacks \"containerEdits\"");
  rejects([](json& s) { s["devices"][0]["containerEdits"]["env"] = {"NOEQUALS"}; },
          "KEY=VALUE");
  rejects([](json& s) { s["devices"][0]["containerEdits"]["mounts"][0].erase("hostPath"); },
          "lacks \"hostPath\"");
  rejects([](json& s) { s["devices"][0]["containerEdits"]["mounts"][0]["containerPath"] = "x"; },
          "absolute path");
  rejects([](json& s) { s["devices"][0]["containerEdits"]["mounts"][0]["options"] = "ro"; },
          "list of strings");
  rejects([](json& s) { s["devices"][0]["containerEdits"]["deviceNodes"] = {json::object()}; },
          "lacks \"path\"");
  rejects([](json& s) { s["devices"][0]["containerEdits"]["hooks"] = {{{"path", "/x"}}}; },
          "hookName");
  rejects([](json& s) { s["devices"][0]["containerEdits"]["volumes"] = json::array(); },
          "unknown key \"volumes\"");
  rejects([](json& s) { s["version"] = "1"; }, "unknown key \"version\"");
}

}  // namespace
}  // namespace pvgpu::tools
