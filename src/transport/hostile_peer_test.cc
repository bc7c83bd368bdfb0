// Peers that break the rules: a raw client speaking the set-up protocol by hand with bad
// descriptors or records, and a guest that scribbles on the shared ring. The host must reject
// or poison with a clear reason, never crash or hang.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "transport/channel.h"
#include "transport/fd_util.h"
#include "transport/shm_layout_unsafe.h"
#include "transport/test_util.h"

namespace pvgpu::transport {
namespace {

using internal::UniqueFd;
constexpr size_t kRing = 64u << 10;
constexpr size_t kFileBytes = internal::kHeaderBytes + 2 * kRing;

UniqueFd ConnectRaw(const std::string& path) {
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return sock;
}

UniqueFd Memfd(size_t size, int seals) {
  UniqueFd fd(::memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  if (seals) {
    EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, seals), 0);
  }
  return fd;
}

constexpr int kGoodSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// What a hand-made guest sends; each test spoils one thing.
struct RawGuest {
  internal::SetupRequest request{internal::kSetupMagic, kTransportVersion, 0, kRing, kRing};
  UniqueFd memfd = Memfd(kFileBytes, kGoodSeals);
  UniqueFd to_host{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  UniqueFd to_guest{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  size_t fd_count = 3;
  UniqueFd sock;

  // Sends the set-up record and returns the host's verdict ("" when accepted).
  std::string SetUp(const std::string& path) {
    sock = ConnectRaw(path);
    const int fds[3] = {memfd.get(), to_host.get(), to_guest.get()};
    Status sent = internal::SendRecord(
        sock.get(), {reinterpret_cast<const uint8_t*>(&request), sizeof(request)},
        std::span<const int>(fds, fd_count));
    EXPECT_TRUE(sent.ok()) << sent.ToString();
    internal::SetupReply reply{};
    std::vector<UniqueFd> none;
    auto got = internal::ReceiveRecord(sock.get(), reinterpret_cast<uint8_t*>(&reply),
                                       sizeof(reply), 0, &none, internal::Deadline(5000));
    if (!got.ok()) return "no reply: " + got.status().message();
    return reply.accepted ? "" : reply.reason;
  }
};

class HostilePeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = std::move(UnixListener::Listen(dir_.Socket())).value();
    listener_->set_handshake_timeout_ms(300);
  }
  // Runs the raw guest against Accept; returns the guest's view of the verdict.
  std::string Run(RawGuest& guest, StatusOr<std::unique_ptr<Endpoint>>* accepted) {
    std::string verdict;
    std::thread client([&] { verdict = guest.SetUp(dir_.Socket()); });
    *accepted = listener_->Accept();
    client.join();
    return verdict;
  }
  void ExpectRejected(RawGuest& guest, const std::string& reason) {
    StatusOr<std::unique_ptr<Endpoint>> accepted = Error(Code::kUnknown, "");
    const std::string verdict = Run(guest, &accepted);
    EXPECT_NE(verdict.find(reason), std::string::npos) << "guest was told: " << verdict;
    ASSERT_FALSE(accepted.ok());
    EXPECT_EQ(accepted.status().code(), Code::kInvalidValue);
    EXPECT_NE(accepted.status().message().find(reason), std::string::npos)
        << accepted.status().message();
  }

  testing::TempDir dir_;
  std::unique_ptr<UnixListener> listener_;
};

TEST_F(HostilePeerTest, ControlAWellFormedRawGuestIsAccepted) {
  RawGuest guest;
  StatusOr<std::unique_ptr<Endpoint>> accepted = Error(Code::kUnknown, "");
  EXPECT_EQ(Run(guest, &accepted), "");
  EXPECT_TRUE(accepted.ok()) << accepted.status().ToString();
}

TEST_F(HostilePeerTest, RejectsAnUnsealedMemfd) {
  RawGuest guest;
  guest.memfd = Memfd(kFileBytes, 0);
  ExpectRejected(guest, "not sealed");
}

TEST_F(HostilePeerTest, RejectsAShrinkableMemfd) {
  RawGuest guest;
  guest.memfd = Memfd(kFileBytes, F_SEAL_GROW | F_SEAL_SEAL);
  ExpectRejected(guest, "not sealed");
}

TEST_F(HostilePeerTest, RejectsATooSmallMemfd) {
  RawGuest guest;
  guest.memfd = Memfd(kFileBytes - 4096, kGoodSeals);
  ExpectRejected(guest, "bytes, expected");
}

TEST_F(HostilePeerTest, RejectsANonMemfd) {
  RawGuest guest;
  guest.memfd = UniqueFd(::eventfd(0, EFD_CLOEXEC));
  ExpectRejected(guest, "not a regular file");
}

TEST_F(HostilePeerTest, RejectsWrongMagic) {
  RawGuest guest;
  guest.request.magic ^= 1;
  ExpectRejected(guest, "magic");
}

TEST_F(HostilePeerTest, RejectsWrongVersion) {
  RawGuest guest;
  guest.request.version = kTransportVersion + 1;
  ExpectRejected(guest, "transport version mismatch");
}

TEST_F(HostilePeerTest, RejectsBadRingSizes) {
  RawGuest guest;
  guest.request.g2h_ring_bytes = kRing + 8;
  ExpectRejected(guest, "powers of two");
}

TEST_F(HostilePeerTest, RejectsADoorbellThatIsNotAnEventfd) {
  RawGuest guest;
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  guest.to_host = UniqueFd(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  ExpectRejected(guest, "not an eventfd");
}

TEST_F(HostilePeerTest, RejectsMissingDescriptors) {
  RawGuest guest;
  guest.fd_count = 1;
  ExpectRejected(guest, "expected 3");
}

TEST(VerifySealedMemfdTest, AcceptsOnlyShrinkSealedMemfdsOfTheSize) {
  EXPECT_TRUE(VerifySealedMemfd(Memfd(8192, F_SEAL_SHRINK).get(), 8192).ok());
  EXPECT_TRUE(VerifySealedMemfd(Memfd(8192, kGoodSeals).get(), 4096).ok());
  Status unsealed = VerifySealedMemfd(Memfd(8192, 0).get(), 8192);
  EXPECT_EQ(unsealed.code(), Code::kInvalidValue);
  EXPECT_NE(unsealed.message().find("shrinking"), std::string::npos) << unsealed.message();
  EXPECT_EQ(VerifySealedMemfd(Memfd(4096, F_SEAL_SHRINK).get(), 8192).code(), Code::kInvalidValue);
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  EXPECT_EQ(VerifySealedMemfd(pipe_fds[0], 1).code(), Code::kInvalidValue);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST_F(HostilePeerTest, DropsASilentClientAfterTheSetUpTimeout) {
  UniqueFd silent = ConnectRaw(dir_.Socket());
  const double start = testing::NowSeconds();
  auto accepted = listener_->Accept();
  EXPECT_EQ(accepted.status().code(), Code::kNotReady) << accepted.status().ToString();
  EXPECT_LT(testing::NowSeconds() - start, 2.0);
}

TEST(HostileHostTest, GuestReportsTheHostsRejectionClearly) {
  // A fake daemon that answers every set-up with a rejection.
  testing::TempDir dir;
  UniqueFd listen_fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, dir.Socket().c_str());
  ASSERT_EQ(::bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listen_fd.get(), 1), 0);
  std::thread fake_host([&] {
    UniqueFd conn(::accept4(listen_fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    uint8_t request[64];
    std::vector<UniqueFd> fds;
    auto got = internal::ReceiveRecord(conn.get(), request, sizeof(request), 3, &fds,
                                       internal::Deadline(5000));
    EXPECT_TRUE(got.ok());
    EXPECT_EQ(fds.size(), 3u);
    internal::SetupReply reply{internal::kReplyMagic, 2, 0, {}};
    std::strcpy(reply.reason, "transport version mismatch: guest speaks 1, pvgpud speaks 2");
    EXPECT_TRUE(internal::SendRecord(conn.get(),
                                     {reinterpret_cast<const uint8_t*>(&reply), sizeof(reply)}, {})
                    .ok());
  });
  auto guest = ConnectUnix(dir.Socket());
  fake_host.join();
  ASSERT_FALSE(guest.ok());
  EXPECT_EQ(guest.status().code(), Code::kDeviceUnavailable);
  EXPECT_NE(guest.status().message().find("rejected the connection: transport version mismatch"),
            std::string::npos)
      << guest.status().message();
}

// A guest that completes set-up honestly, then writes garbage into the shared header or ring.
class CorruptRingTest : public HostilePeerTest {
 protected:
  void SetUp() override {
    HostilePeerTest::SetUp();
    StatusOr<std::unique_ptr<Endpoint>> accepted = Error(Code::kUnknown, "");
    ASSERT_EQ(Run(guest_, &accepted), "");
    ASSERT_TRUE(accepted.ok());
    host_ = std::move(accepted).value();
    map_ = ::mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, guest_.memfd.get(), 0);
    ASSERT_NE(map_, MAP_FAILED);
    header_ = static_cast<internal::ShmHeader*>(map_);
    g2h_ = static_cast<uint8_t*>(map_) + internal::kHeaderBytes;
  }
  void TearDown() override {
    if (map_ != nullptr && map_ != MAP_FAILED) ::munmap(map_, kFileBytes);
  }
  void Publish(uint64_t tail) {
    internal::Word(header_->g2h_tail).store(tail, std::memory_order_release);
    const uint64_t one = 1;
    ASSERT_EQ(::write(guest_.to_host.get(), &one, sizeof(one)), 8);
  }
  void ExpectPoisoned() {
    std::vector<uint8_t> got;
    Status status = host_->Receive(&got, 2000);
    EXPECT_EQ(status.code(), Code::kInvalidValue) << status.ToString();
    EXPECT_NE(status.message().find("corrupt ring"), std::string::npos) << status.message();
    // Fatal for this endpoint: every later call fails the same way.
    EXPECT_EQ(host_->Receive(&got, 0).code(), Code::kInvalidValue);
    EXPECT_EQ(host_->Send(std::vector<uint8_t>{1}).code(), Code::kInvalidValue);
    // ... and the guest is told: the host hung up on it.
    pollfd hup{guest_.sock.get(), POLLRDHUP, 0};
    EXPECT_EQ(::poll(&hup, 1, 2000), 1);
  }

  RawGuest guest_;
  std::unique_ptr<Endpoint> host_;
  void* map_ = nullptr;
  internal::ShmHeader* header_ = nullptr;
  uint8_t* g2h_ = nullptr;
};

TEST_F(CorruptRingTest, ControlAnHonestFrameArrives) {
  const uint32_t length = 3;
  std::memcpy(g2h_, &length, 4);
  std::memcpy(g2h_ + 4, "abc", 3);
  Publish(8);
  std::vector<uint8_t> got;
  ASSERT_TRUE(host_->Receive(&got, 2000).ok());
  EXPECT_EQ(got, (std::vector<uint8_t>{'a', 'b', 'c'}));
}

TEST_F(CorruptRingTest, TailFarBeyondTheRing) {
  Publish(uint64_t{1} << 40);
  ExpectPoisoned();
}

TEST_F(CorruptRingTest, HugeLength) {
  const uint32_t length = 0xFFFFFFFFu;
  std::memcpy(g2h_, &length, 4);
  Publish(kRing);
  ExpectPoisoned();
}

TEST_F(CorruptRingTest, LengthPastTheTail) {
  const uint32_t length = 1000;
  std::memcpy(g2h_, &length, 4);
  Publish(16);
  ExpectPoisoned();
}

TEST_F(CorruptRingTest, ImpossibleHeadOnTheHostToGuestRing) {
  // Ahead of any tail the host's ring reaches here. The producer reads the consumer's head only
  // when the space it last saw runs out (a ring's worth of messages at most), and then finds it
  // impossible.
  internal::Word(header_->h2g_head).store(uint64_t{1} << 62, std::memory_order_release);
  Status sent = Status::Ok();
  const std::vector<uint8_t> message(1000, 7);
  for (int i = 0; i < 100000 && sent.ok(); ++i) sent = host_->Send(message);
  EXPECT_EQ(sent.code(), Code::kInvalidValue) << sent.ToString();
  std::vector<uint8_t> got;
  EXPECT_EQ(host_->Receive(&got, 0).code(), Code::kInvalidValue);
}

}  // namespace
}  // namespace pvgpu::transport
