// Connection life cycle of the local channel: peers that die or close, stale and live socket
// files, Shutdown, and set-up on a per-connection thread.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "transport/channel.h"
#include "transport/test_util.h"

namespace pvgpu::transport {
namespace {

using testing::NowSeconds;
using testing::Pattern;

bool Contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(UnixLifecycleTest, KilledGuestProcessEndsHostReceivePromptly) {
  testing::TempDir dir;
  auto listener = std::move(UnixListener::Listen(dir.Socket())).value();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto guest = ConnectUnix(dir.Socket());
    if (!guest.ok()) ::_exit(2);
    for (uint64_t i = 0;; ++i) {
      if (!(*guest)->Send(Pattern(i, 512)).ok()) ::_exit(3);
    }
  }
  auto host = listener->Accept();
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ((*host)->peer_pid(), child);
  std::vector<uint8_t> got;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE((*host)->Receive(&got, 5000).ok());
    ASSERT_TRUE(testing::MatchesPattern(got, i));
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  const double start = NowSeconds();
  Status status;
  while ((status = (*host)->Receive(&got, 5000)).ok()) {
  }  // drain what the child published before it died
  EXPECT_EQ(status.code(), Code::kDeviceUnavailable) << status.ToString();
  EXPECT_TRUE(Contains(status, "guest disconnected")) << status.ToString();
  EXPECT_LT(NowSeconds() - start, 1.0);
  EXPECT_EQ((*host)->Send(Pattern(0, 8)).code(), Code::kDeviceUnavailable);
}

TEST(UnixLifecycleTest, KilledHostProcessFailsGuestWaitsPromptly) {
  testing::TempDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto listener = UnixListener::Listen(dir.Socket());
    if (!listener.ok()) ::_exit(2);
    auto host = (*listener)->Accept();
    ::pause();  // hold the connection until killed
    ::_exit(0);
  }
  StatusOr<std::unique_ptr<Endpoint>> guest = Error(Code::kUnknown, "never connected");
  for (int i = 0; i < 500 && !guest.ok(); ++i) {
    guest = ConnectUnix(dir.Socket());
    if (!guest.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(guest.ok()) << guest.status().ToString();
  double returned_at = 0;
  Status waited;
  std::thread waiter([&] {
    waited = (*guest)->WaitFence(1, -1);
    returned_at = NowSeconds();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double killed_at = NowSeconds();
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  waiter.join();
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(waited.code(), Code::kDeviceUnavailable) << waited.ToString();
  EXPECT_TRUE(Contains(waited, "host closed the channel")) << waited.ToString();
  EXPECT_LT(returned_at - killed_at, 1.0);
  std::vector<uint8_t> got;
  EXPECT_EQ((*guest)->Receive(&got, -1).code(), Code::kDeviceUnavailable);
}

TEST(UnixLifecycleTest, DestroyedHostEndpointFailsEveryGuestCall) {
  testing::TempDir dir;
  auto c = testing::Connect(dir.Socket());
  ASSERT_NE(c.host, nullptr);
  Status received;
  std::thread blocked([&] {
    std::vector<uint8_t> got;
    received = c.guest->Receive(&got, -1);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  c.host.reset();
  blocked.join();
  EXPECT_EQ(received.code(), Code::kDeviceUnavailable) << received.ToString();
  EXPECT_EQ(c.guest->Send(Pattern(1, 8)).code(), Code::kDeviceUnavailable);
  EXPECT_EQ(c.guest->WaitFence(1, -1).code(), Code::kDeviceUnavailable);
  EXPECT_EQ(c.guest->ReceiveFd(-1).status().code(), Code::kDeviceUnavailable);
  EXPECT_EQ(c.guest->SendFd(0).code(), Code::kDeviceUnavailable);
}

TEST(UnixLifecycleTest, SendBlockedOnAFullRingFailsWhenTheHostGoes) {
  testing::TempDir dir;
  auto c = testing::Connect(dir.Socket());
  ASSERT_NE(c.host, nullptr);
  Status sent;
  std::thread filler([&] {
    for (uint64_t i = 0; (sent = c.guest->Send(Pattern(i, 4096))).ok(); ++i) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the 64 KiB ring is full
  c.host.reset();
  filler.join();
  EXPECT_EQ(sent.code(), Code::kDeviceUnavailable) << sent.ToString();
}

TEST(UnixLifecycleTest, GuestCloseDrainsThenEndsHostReceive) {
  testing::TempDir dir;
  auto c = testing::Connect(dir.Socket());
  ASSERT_NE(c.host, nullptr);
  ASSERT_TRUE(c.guest->Send(Pattern(0, 100)).ok());
  c.guest->Close();
  std::vector<uint8_t> got;
  EXPECT_TRUE(c.host->Receive(&got, 1000).ok());
  Status status = c.host->Receive(&got, -1);
  EXPECT_EQ(status.code(), Code::kDeviceUnavailable);
  EXPECT_TRUE(Contains(status, "guest disconnected")) << status.ToString();
  EXPECT_EQ(c.guest->Send(Pattern(0, 1)).code(), Code::kDeviceUnavailable);
}

TEST(UnixLifecycleTest, ReplacesAStaleSocketFile) {
  testing::TempDir dir;
  const std::string path = dir.Socket();
  {  // a daemon that died without unlinking its socket
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  auto c = testing::Connect(path);
  ASSERT_NE(c.host, nullptr);
  ASSERT_TRUE(c.guest->Send(Pattern(1, 10)).ok());
}

TEST(UnixLifecycleTest, RefusesToStealALiveSocket) {
  testing::TempDir dir;
  auto first = UnixListener::Listen(dir.Socket());
  ASSERT_TRUE(first.ok());
  auto second = UnixListener::Listen(dir.Socket());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kIllegalState);
  EXPECT_TRUE(Contains(second.status(), "another pvgpud is serving " + dir.Socket()));
  // The refused attempt left the live socket alone; its probe shows up as a connection that
  // hangs up before set-up, which an accept loop skips.
  std::thread guest([&] { EXPECT_TRUE(ConnectUnix(dir.Socket()).ok()); });
  auto accepted = (*first)->Accept();
  if (!accepted.ok()) {
    EXPECT_EQ(accepted.status().code(), Code::kNotReady) << accepted.status().ToString();
    accepted = (*first)->Accept();
  }
  EXPECT_TRUE(accepted.ok()) << accepted.status().ToString();
  guest.join();
}

TEST(UnixLifecycleTest, RefusesAPathThatIsNotASocket) {
  testing::TempDir dir;
  int fd = ::open(dir.Socket().c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ::close(fd);
  auto listener = UnixListener::Listen(dir.Socket());
  EXPECT_EQ(listener.status().code(), Code::kIllegalState);
}

TEST(UnixLifecycleTest, CreatesParentsAppliesModeAndCleansUp) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/run/pvgpu/socket";
  {
    auto listener = UnixListener::Listen(path, 0600);
    ASSERT_TRUE(listener.ok()) << listener.status().ToString();
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the listener removes its socket";
}

TEST(UnixLifecycleTest, ConnectWithoutDaemonIsDeviceUnavailable) {
  testing::TempDir dir;
  auto guest = ConnectUnix(dir.Socket());
  EXPECT_EQ(guest.status().code(), Code::kDeviceUnavailable);
  EXPECT_TRUE(Contains(guest.status(), dir.Socket()));
}

TEST(UnixLifecycleTest, ShutdownWakesABlockedAccept) {
  testing::TempDir dir;
  auto listener = std::move(UnixListener::Listen(dir.Socket())).value();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    listener->Shutdown();
  });
  auto accepted = listener->Accept();
  stopper.join();
  EXPECT_EQ(accepted.status().code(), Code::kDeviceUnavailable);
}

TEST(UnixLifecycleTest, SetUpCanRunOnAPerConnectionThread) {
  testing::TempDir dir;
  auto listener = std::move(UnixListener::Listen(dir.Socket())).value();
  std::thread guest([&] {
    auto endpoint = ConnectUnix(dir.Socket());
    ASSERT_TRUE(endpoint.ok());
    EXPECT_TRUE((*endpoint)->Send(Pattern(3, 30)).ok());
    std::vector<uint8_t> reply;
    EXPECT_TRUE((*endpoint)->Receive(&reply, 5000).ok());
  });
  auto pending = listener->AcceptPending();
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(pending->peer_pid(), ::getpid());
  std::thread session([p = std::move(pending).value()]() mutable {
    auto host = p.Complete(5000);
    ASSERT_TRUE(host.ok()) << host.status().ToString();
    std::vector<uint8_t> got;
    ASSERT_TRUE((*host)->Receive(&got, 5000).ok());
    EXPECT_TRUE(testing::MatchesPattern(got, 3));
    EXPECT_TRUE((*host)->Send(got).ok());
  });
  session.join();
  guest.join();
}

}  // namespace
}  // namespace pvgpu::transport
