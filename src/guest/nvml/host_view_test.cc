#include "guest/nvml/host_view.h"

#include <gtest/gtest.h>

namespace pvgpu::guest::nvml {
namespace {

// Shaped like src/host/status.cc's output for a session with two cpu adapters.
constexpr char kStatus[] = R"({
  "host": {"version": "pvgpu 0.1.0", "driver_version": 13000, "pid": 42},
  "adapters": [
    {"index": 0, "host_index": 0, "kind": "cpu", "name": "pvgpu cpu 0",
     "uuid": "GPU-00112233-4455-8677-8899-aabbccddeeff", "luid": 18446744073709551615,
     "software": true, "integrated": true, "memory_total": 1073741824, "memory_used": 4096,
     "adapter_memory_total": 2147483648, "utilization_percent": 37,
     "pci_bus_id": "00000000:c0:00.0", "compute_capability": "8.6"},
    {"index": 1, "host_index": 1, "kind": "cpu", "name": "pvgpu cpu 1",
     "uuid": "GPU-1", "luid": 2, "software": true, "integrated": false,
     "memory_total": 10, "memory_used": 0, "utilization_percent": 0,
     "pci_bus_id": "0001:C1:1F.0", "compute_capability": "7.5"}
  ],
  "sessions": [
    {"id": 3, "pid": 1234, "name": "saxpy", "memory_used": 4096, "contexts": 1,
     "devices": [0, 1]},
    {"id": 4, "pid": 1234, "name": "saxpy", "memory_used": 0, "contexts": 0, "devices": []}
  ]
})";

TEST(HostViewTest, ParsesEveryField) {
  StatusOr<HostView> view = ParseHostStatus(kStatus);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->version, "pvgpu 0.1.0");
  EXPECT_EQ(view->driver_version, 13000);
  ASSERT_EQ(view->adapters.size(), 2u);
  const AdapterView& a = view->adapters[0];
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.kind, "cpu");
  EXPECT_EQ(a.name, "pvgpu cpu 0");
  EXPECT_EQ(a.uuid, "GPU-00112233-4455-8677-8899-aabbccddeeff");
  EXPECT_EQ(a.luid, 18446744073709551615ull);
  EXPECT_TRUE(a.software);
  EXPECT_TRUE(a.integrated);
  EXPECT_EQ(a.memory_total, 1073741824u);
  EXPECT_EQ(a.memory_used, 4096u);
  EXPECT_EQ(a.utilization_percent, 37u);
  EXPECT_EQ(a.pci_domain, 0u);
  EXPECT_EQ(a.pci_bus, 0xc0u);
  EXPECT_EQ(a.pci_device, 0u);
  EXPECT_EQ(a.cc_major, 8);
  EXPECT_EQ(a.cc_minor, 6);
  const AdapterView& b = view->adapters[1];
  EXPECT_FALSE(b.integrated);
  EXPECT_EQ(b.pci_domain, 1u);
  EXPECT_EQ(b.pci_bus, 0xc1u);
  EXPECT_EQ(b.pci_device, 0x1fu);
  EXPECT_EQ(b.cc_major, 7);
  EXPECT_EQ(b.cc_minor, 5);
  ASSERT_EQ(view->sessions.size(), 2u);
  EXPECT_EQ(view->sessions[0].pid, 1234u);
  EXPECT_EQ(view->sessions[0].name, "saxpy");
  EXPECT_EQ(view->sessions[0].memory_used, 4096u);
  EXPECT_EQ(view->sessions[0].contexts, 1u);
  EXPECT_EQ(view->sessions[0].devices, (std::vector<int>{0, 1}));
  EXPECT_TRUE(view->sessions[1].devices.empty());
}

TEST(HostViewTest, MissingSectionsAreEmpty) {
  StatusOr<HostView> view = ParseHostStatus("{}");
  ASSERT_TRUE(view.ok());
  EXPECT_TRUE(view->adapters.empty());
  EXPECT_TRUE(view->sessions.empty());
  EXPECT_EQ(view->driver_version, 0);
}

TEST(HostViewTest, RejectsMalformedDocuments) {
  EXPECT_FALSE(ParseHostStatus("").ok());
  EXPECT_FALSE(ParseHostStatus("{\"adapters\": [").ok());
  StatusOr<HostView> wrong_type = ParseHostStatus(R"({"adapters": [{"memory_total": "big"}]})");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("unreadable host status"), std::string::npos);
}

TEST(HostViewTest, PciBusIdForms) {
  unsigned domain = 9, bus = 9, device = 9, function = 9;
  ASSERT_TRUE(ParsePciBusId("00000000:C0:00.0", &domain, &bus, &device, &function));
  EXPECT_EQ(domain, 0u);
  EXPECT_EQ(bus, 0xc0u);
  EXPECT_EQ(device, 0u);
  EXPECT_EQ(function, 0u);
  ASSERT_TRUE(ParsePciBusId("0002:c1:1f.3", &domain, &bus, &device, &function));
  EXPECT_EQ(domain, 2u);
  EXPECT_EQ(bus, 0xc1u);
  EXPECT_EQ(device, 0x1fu);
  EXPECT_EQ(function, 3u);
  ASSERT_TRUE(ParsePciBusId("c2:04.0", &domain, &bus, &device, &function));
  EXPECT_EQ(domain, 0u);
  EXPECT_EQ(bus, 0xc2u);
  EXPECT_EQ(device, 4u);
  EXPECT_FALSE(ParsePciBusId("", &domain, &bus, &device, &function));
  EXPECT_FALSE(ParsePciBusId("c0:00", &domain, &bus, &device, &function));
  EXPECT_FALSE(ParsePciBusId("zz:00.0", &domain, &bus, &device, &function));
  EXPECT_FALSE(ParsePciBusId("1:2:3:4.0", &domain, &bus, &device, &function));
}

}  // namespace
}  // namespace pvgpu::guest::nvml
