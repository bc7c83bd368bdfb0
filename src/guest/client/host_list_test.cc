#include "guest/client/host_list.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

namespace pvgpu::guest {
namespace {

// A directory with real (bound, unlistened) sockets, as a container sees its device mounts.
class SocketDir {
 public:
  SocketDir() {
    char path[] = "/tmp/pvgpu-hostlist-XXXXXX";
    EXPECT_NE(mkdtemp(path), nullptr);
    dir_ = path;
  }
  ~SocketDir() {
    for (const std::string& name : names_) unlink((dir_ + "/" + name).c_str());
    for (int fd : fds_) close(fd);
    rmdir(dir_.c_str());
  }
  void AddSocket(const std::string& name) {
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = dir_ + "/" + name;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    fds_.push_back(fd);
    names_.push_back(name);
  }
  void AddFile(const std::string& name) {
    std::ofstream(dir_ + "/" + name) << "not a socket";
    names_.push_back(name);
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::string> names_;
  std::vector<int> fds_;
};

TEST(HostList, NaturalOrder) {
  EXPECT_TRUE(NaturalLess("gpu-2.sock", "gpu-10.sock"));
  EXPECT_FALSE(NaturalLess("gpu-10.sock", "gpu-2.sock"));
  EXPECT_TRUE(NaturalLess("all.sock", "gpu-0.sock"));
  EXPECT_TRUE(NaturalLess("gpu-9", "gpu-9a"));
  EXPECT_FALSE(NaturalLess("gpu-3", "gpu-3"));
  EXPECT_TRUE(NaturalLess("gpu-002", "gpu-10"));
}

TEST(HostList, ExplicitListIsKeptInOrder) {
  EXPECT_EQ(ExpandHostList(" unix:/b.sock , unix:/a.sock,,", "unix:/default", "/nonexistent"),
            (std::vector<std::string>{"unix:/b.sock", "unix:/a.sock"}));
}

TEST(HostList, DefaultWithoutDeviceDirectory) {
  EXPECT_EQ(ExpandHostList(nullptr, "unix:/default", "/nonexistent"),
            std::vector<std::string>{"unix:/default"});
  EXPECT_EQ(ExpandHostList("", "unix:/default", "/nonexistent"),
            std::vector<std::string>{"unix:/default"});
}

TEST(HostList, DeviceDirectoryReplacesTheDefault) {
  SocketDir devices;
  devices.AddSocket("gpu-10.sock");
  devices.AddSocket("gpu-2.sock");
  devices.AddFile("README");  // only sockets count
  const std::string d = devices.dir();
  const std::vector<std::string> expected = {"unix:" + d + "/gpu-2.sock",
                                             "unix:" + d + "/gpu-10.sock"};
  EXPECT_EQ(ExpandHostList(nullptr, "unix:/default", d), expected);
  // The directory form, as the CDI spec sets it, alone and mixed with other hosts.
  EXPECT_EQ(ExpandHostList(("dir:" + d).c_str(), "unix:/default", "/nonexistent"), expected);
  std::vector<std::string> mixed = {"unix:/first"};
  mixed.insert(mixed.end(), expected.begin(), expected.end());
  EXPECT_EQ(ExpandHostList(("unix:/first,dir:" + d).c_str(), "unix:/default", "/x"), mixed);
  // An explicit PVGPU_HOST wins over the directory.
  EXPECT_EQ(ExpandHostList("unix:/mine", "unix:/default", d),
            std::vector<std::string>{"unix:/mine"});
}

TEST(HostList, AnExistingDefaultSocketWinsOverTheDirectory) {
  SocketDir host;  // the host itself: its admin socket and a device socket
  host.AddSocket("pvgpud.sock");
  SocketDir devices;
  devices.AddSocket("gpu-0.sock");
  const std::string default_address = "unix:" + host.dir() + "/pvgpud.sock";
  EXPECT_EQ(ExpandHostList(nullptr, default_address, devices.dir()),
            std::vector<std::string>{default_address});
}

TEST(HostList, EmptyDirectoryMeansNoHosts) {
  SocketDir empty;
  EXPECT_TRUE(ExpandHostList(("dir:" + empty.dir()).c_str(), "unix:/default", "/x").empty());
  EXPECT_EQ(ExpandHostList(nullptr, "unix:/default", empty.dir()),
            std::vector<std::string>{"unix:/default"});
}

}  // namespace
}  // namespace pvgpu::guest
