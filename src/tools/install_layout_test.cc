#include "tools/install_layout.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace pvgpu::tools {
namespace {

TEST(InstallLayoutTest, PrependsWithoutEmptyEntries) {
  EXPECT_EQ(PrependToSearchPath("/p/lib/pvgpu", nullptr), "/p/lib/pvgpu");
  EXPECT_EQ(PrependToSearchPath("/p/lib/pvgpu", ""), "/p/lib/pvgpu");
  EXPECT_EQ(PrependToSearchPath("/p/lib/pvgpu", "/a:/b"), "/p/lib/pvgpu:/a:/b");
}

TEST(InstallLayoutTest, PrefixFromEnvironmentIsResolved) {
  char dir_template[] = "/tmp/pvgpu-layout-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = dir_template;
  setenv("PVGPU_PREFIX", (dir + "/./").c_str(), 1);
  StatusOr<InstallLayout> layout = FindInstallLayout();
  unsetenv("PVGPU_PREFIX");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(layout->prefix, dir);
  EXPECT_EQ(layout->daemon, dir + "/bin/pvgpud");
  EXPECT_EQ(layout->guest_lib_dir, dir + "/lib/pvgpu");
  EXPECT_EQ(layout->libexec_dir, dir + "/libexec/pvgpu");
  rmdir(dir_template);
}

TEST(InstallLayoutTest, MissingPrefixFromEnvironmentIsAnError) {
  setenv("PVGPU_PREFIX", "/nonexistent/pvgpu-prefix", 1);
  StatusOr<InstallLayout> layout = FindInstallLayout();
  unsetenv("PVGPU_PREFIX");
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("PVGPU_PREFIX"), std::string::npos);
}

TEST(InstallLayoutTest, DefaultPrefixIsAboveTheExecutablesDirectory) {
  unsetenv("PVGPU_PREFIX");
  char exe[4096];
  ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(length, 0);
  exe[length] = '\0';
  std::string path = exe;
  std::string expected = path.substr(0, path.rfind('/'));
  expected = expected.substr(0, expected.rfind('/'));
  StatusOr<InstallLayout> layout = FindInstallLayout();
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(layout->prefix, expected);
}

}  // namespace
}  // namespace pvgpu::tools
