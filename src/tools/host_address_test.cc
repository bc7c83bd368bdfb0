#include "tools/host_address.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "tools/testdata/listening_socket.h"

namespace pvgpu::tools {
namespace {

TEST(HostAddressTest, ParsesUnixForms) {
  for (const char* text : {"unix:/run/pvgpu.sock", "unix:///run/pvgpu.sock", "/run/pvgpu.sock"}) {
    StatusOr<HostAddress> address = ParseHostAddress(text);
    ASSERT_TRUE(address.ok()) << text << ": " << address.status().message();
    EXPECT_EQ(address->kind, HostAddress::Kind::kUnix);
    EXPECT_EQ(address->target, "/run/pvgpu.sock");
    EXPECT_EQ(address->original, text);
  }
  StatusOr<HostAddress> relative = ParseHostAddress("unix:sock/pvgpud.sock");
  ASSERT_TRUE(relative.ok());
  EXPECT_EQ(relative->target, "sock/pvgpud.sock");
}

TEST(HostAddressTest, ParsesNetworkForms) {
  StatusOr<HostAddress> tcp = ParseHostAddress("tcp://gpu-box:7070");
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->kind, HostAddress::Kind::kTcp);
  EXPECT_EQ(tcp->target, "gpu-box:7070");
  StatusOr<HostAddress> tls = ParseHostAddress("tls://[::1]:443");
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->kind, HostAddress::Kind::kTls);
  EXPECT_EQ(tls->target, "[::1]:443");
}

TEST(HostAddressTest, RejectsMalformedAddresses) {
  for (const char* text : {"", "unix:", "http://x:1", "tcp://", "tcp://host", "tcp://host:",
                           "tcp://:80", "tls://h:0", "tls://h:65536", "tcp://h:8x"}) {
    StatusOr<HostAddress> address = ParseHostAddress(text);
    EXPECT_FALSE(address.ok()) << "accepted '" << text << "'";
  }
  std::string long_path = "unix:/" + std::string(MaxUnixSocketPathLength(), 'a');
  StatusOr<HostAddress> too_long = ParseHostAddress(long_path);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("limit"), std::string::npos);
}

TEST(HostAddressTest, UnixReachabilityFollowsAListeningSocket) {
  // pvgpud listens with SOCK_SEQPACKET; any listener type counts.
  for (int type : {SOCK_SEQPACKET, SOCK_STREAM}) {
    char dir_template[] = "/tmp/pvgpu-host-address-test.XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    std::string path = std::string(dir_template) + "/s.sock";
    StatusOr<HostAddress> address = ParseHostAddress("unix:" + path);
    ASSERT_TRUE(address.ok());
    EXPECT_FALSE(IsReachable(*address));

    const int fd = ListenOnUnixSocket(path, type);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(IsReachable(*address)) << "socket type " << type;

    // A socket file left behind by a dead daemon is not reachable.
    close(fd);
    EXPECT_FALSE(IsReachable(*address));
    unlink(path.c_str());
    rmdir(dir_template);
  }
}

TEST(HostAddressTest, NetworkAddressesAreNotProbed) {
  StatusOr<HostAddress> address = ParseHostAddress("tcp://192.0.2.1:9");  // TEST-NET-1
  ASSERT_TRUE(address.ok());
  EXPECT_TRUE(IsReachable(*address));
}

}  // namespace
}  // namespace pvgpu::tools
