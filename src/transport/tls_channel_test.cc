// The remote channel over TLS 1.3 with the token, on loopback, with certificates made at run
// time: what is accepted, what is refused (and that the listener keeps serving afterwards).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "transport/tcp_test_util.h"
#include "transport/test_util.h"
#include "transport/tls_cipher.h"
#include "transport/tls_test_pki.h"

namespace pvgpu::transport {
namespace {

using testing::ConnectPair;
using testing::MatchesPattern;
using testing::Pattern;
using testing::TestToken;

class TlsChannel : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::MakeTestPki(dir_.path(), {"127.0.0.1", "pvgpu-test-host"}, &pki_));
    host_.tls_cert_file = pki_.host_cert;
    host_.tls_key_file = pki_.host_key;
    host_.token = TestToken();
    guest_.tls_ca_file = pki_.ca_cert;
    guest_.token = TestToken();
  }
  // Starts a TLS listener on 127.0.0.1 with host_.
  std::unique_ptr<RemoteListener> Listen() {
    auto listener = RemoteListener::Listen("tls://127.0.0.1:0", host_);
    EXPECT_TRUE(listener.ok()) << listener.status().ToString();
    return listener.ok() ? std::move(listener).value() : nullptr;
  }
  // The listener still serves a correct guest (refusals must not disturb it).
  void ExpectServes(RemoteListener& listener) {
    auto guest = ConnectRemote(listener.address(), guest_);
    ASSERT_TRUE(guest.ok()) << guest.status().ToString();
    auto host = listener.Accept();
    ASSERT_TRUE(host.ok());
    ASSERT_TRUE((*guest)->Send(Pattern(3, 1000)).ok());
    std::vector<uint8_t> message;
    ASSERT_TRUE((*host)->Receive(&message, 10000).ok());
    EXPECT_TRUE(MatchesPattern(message, 3));
  }

  testing::TempDir dir_;
  testing::TestPki pki_;
  RemoteOptions host_;
  RemoteOptions guest_;
};

TEST_F(TlsChannel, CarriesMessagesAndFences) {
  auto pair = ConnectPair("tls://127.0.0.1:0", host_, guest_);
  ASSERT_TRUE(pair.guest && pair.host);
  EXPECT_NE(pair.guest->Describe().find("tls://127.0.0.1:"), std::string::npos);
  // Bulk data in maximal chunks, pipelined, then a fence.
  constexpr int kChunks = 32;
  const auto start = std::chrono::steady_clock::now();
  std::thread sender([&] {
    for (int i = 1; i <= kChunks; ++i) ASSERT_TRUE(pair.guest->Send(Pattern(i, 4u << 20)).ok());
  });
  std::vector<uint8_t> message;
  for (int i = 1; i <= kChunks; ++i) {
    ASSERT_TRUE(pair.host->Receive(&message, 10000).ok());
    ASSERT_TRUE(MatchesPattern(message, i)) << "chunk " << i;
  }
  sender.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("TLS loopback: %d MiB in %.3f s (%.0f MiB/s)\n", kChunks * 4, seconds,
              kChunks * 4 / seconds);
  pair.host->PublishFence(kChunks);
  EXPECT_TRUE(pair.guest->WaitFence(kChunks, 10000).ok());
}

TEST_F(TlsChannel, WrongTokenIsRejected) {
  auto listener = Listen();
  ASSERT_TRUE(listener);
  guest_.token = "not-the-right-token-at-all";
  auto guest = ConnectRemote(listener->address(), guest_);
  ASSERT_FALSE(guest.ok());
  EXPECT_EQ(guest.status().code(), Code::kNotPermitted);
  EXPECT_NE(guest.status().message().find("token rejected"), std::string::npos)
      << guest.status().message();
  guest_.token = TestToken();
  ExpectServes(*listener);
}

TEST_F(TlsChannel, MissingTokenIsAnErrorBeforeConnecting) {
  guest_.token.clear();
  auto guest = ConnectRemote("tls://127.0.0.1:1", guest_);
  EXPECT_EQ(guest.status().code(), Code::kInvalidValue);
  EXPECT_NE(guest.status().message().find("PVGPU_TOKEN_FILE"), std::string::npos);
}

TEST_F(TlsChannel, CertificateFromAnotherCaIsRefused) {
  host_.tls_cert_file = pki_.other_host_cert;
  host_.tls_key_file = pki_.other_host_key;
  auto listener = Listen();
  ASSERT_TRUE(listener);
  auto guest = ConnectRemote(listener->address(), guest_);
  ASSERT_FALSE(guest.ok());
  EXPECT_EQ(guest.status().code(), Code::kNotPermitted);
  EXPECT_NE(guest.status().message().find("certificate verify failed"), std::string::npos)
      << guest.status().message();
  guest_.tls_ca_file = pki_.other_ca_cert;
  ExpectServes(*listener);
}

TEST_F(TlsChannel, CertificateMustNameTheHost) {
  auto listener = Listen();
  ASSERT_TRUE(listener);
  // The certificate names 127.0.0.1 and pvgpu-test-host, not localhost.
  const std::string address = listener->address();
  auto guest = ConnectRemote("tls://localhost" + address.substr(address.rfind(':')), guest_);
  ASSERT_FALSE(guest.ok());
  EXPECT_EQ(guest.status().code(), Code::kNotPermitted);
  EXPECT_NE(guest.status().message().find("certificate verify failed"), std::string::npos)
      << guest.status().message();
  ExpectServes(*listener);
}

TEST_F(TlsChannel, PlainTcpToTlsListenerIsRefused) {
  auto listener = Listen();
  ASSERT_TRUE(listener);
  const std::string address = listener->address();
  auto guest = ConnectRemote("tcp://" + address.substr(6), guest_);
  ASSERT_FALSE(guest.ok());
  EXPECT_NE(guest.status().message().find("tls:// listener"), std::string::npos)
      << guest.status().message();
  ExpectServes(*listener);
}

TEST_F(TlsChannel, TlsGuestToPlainListenerIsRefused) {
  auto listener = RemoteListener::Listen("tcp://127.0.0.1:0", {});
  ASSERT_TRUE(listener.ok());
  const std::string address = (*listener)->address();
  auto guest = ConnectRemote("tls://" + address.substr(6), guest_);
  ASSERT_FALSE(guest.ok());
}

TEST_F(TlsChannel, ListenerNeedsCertificateKeyAndToken) {
  RemoteOptions missing = host_;
  missing.token.clear();
  EXPECT_EQ(RemoteListener::Listen("tls://127.0.0.1:0", missing).status().code(),
            Code::kInvalidValue);
  missing = host_;
  missing.token = "short";
  EXPECT_EQ(RemoteListener::Listen("tls://127.0.0.1:0", missing).status().code(),
            Code::kInvalidValue);
  missing = host_;
  missing.tls_key_file = pki_.other_host_key;  // does not match the certificate
  EXPECT_EQ(RemoteListener::Listen("tls://127.0.0.1:0", missing).status().code(),
            Code::kInvalidValue);
}

TEST_F(TlsChannel, SilentClientDoesNotBlockOthers) {
  host_.connect_timeout_ms = 60000;
  auto listener = Listen();
  ASSERT_TRUE(listener);
  // A bare TCP connection that never sends a ClientHello: its set-up waits on its own thread.
  const std::string address = listener->address();
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(port));
  target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)), 0);
  ExpectServes(*listener);
  ::close(fd);
}

// The suite both ends agree on, as the endpoint describes it.
std::string Negotiated(const RemoteOptions& host, const RemoteOptions& guest) {
  auto pair = ConnectPair("tls://127.0.0.1:0", host, guest);
  if (!pair.guest || !pair.host) return "(no connection)";
  const std::string text = pair.guest->Describe();
  EXPECT_NE(pair.host->Describe().find(text.substr(text.find('('))), std::string::npos)
      << "the two ends disagree: " << text << " / " << pair.host->Describe();
  return text;
}

TEST_F(TlsChannel, CipherSuiteFollowsWhatTheCpuAccelerates) {
  const std::string fast =
      internal::CpuAcceleratesAesGcm() ? "TLS_AES_128_GCM_SHA256" : "TLS_CHACHA20_POLY1305_SHA256";
  EXPECT_NE(Negotiated(host_, guest_).find(fast), std::string::npos) << Negotiated(host_, guest_);
  // A guest whose CPU lacks AES instructions puts ChaCha20 first; the host follows it.
  RemoteOptions slow_guest = guest_;
  slow_guest.tls_ciphersuites = "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256";
  EXPECT_NE(Negotiated(host_, slow_guest).find("TLS_CHACHA20_POLY1305_SHA256"), std::string::npos);
  // Otherwise the host's order decides (a guest preferring AES-256 still gets the host's).
  RemoteOptions other_guest = guest_;
  other_guest.tls_ciphersuites = "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256";
  RemoteOptions aes_host = host_;
  aes_host.tls_ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384";
  EXPECT_NE(Negotiated(aes_host, other_guest).find("TLS_AES_128_GCM_SHA256"), std::string::npos);
  // Messages cross with either.
  auto pair = ConnectPair("tls://127.0.0.1:0", host_, slow_guest);
  ASSERT_TRUE(pair.guest && pair.host);
  ASSERT_TRUE(pair.guest->Send(Pattern(9, 300000)).ok());
  std::vector<uint8_t> message;
  ASSERT_TRUE(pair.host->Receive(&message, 10000).ok());
  EXPECT_TRUE(MatchesPattern(message, 9));
}

TEST_F(TlsChannel, BadCipherSuitesAreRefusedClearly) {
  host_.tls_ciphersuites = "TLS_NO_SUCH_SUITE";
  auto listener = RemoteListener::Listen("tls://127.0.0.1:0", host_);
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), Code::kInvalidValue);
  EXPECT_NE(listener.status().message().find("cipher suites"), std::string::npos)
      << listener.status().message();
}

TEST(TlsCipher, OneCoreRateIsMeasured) {
  for (const char* suite : {"TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"}) {
    auto rate = internal::MeasureCipherBytesPerSecond(suite, 0.05);
    ASSERT_TRUE(rate.ok()) << suite << ": " << rate.status().ToString();
    EXPECT_GT(*rate, 1e6) << suite;  // any machine seals more than a megabyte a second
  }
  EXPECT_EQ(internal::MeasureCipherBytesPerSecond("TLS_NULL", 0.01).status().code(),
            Code::kInvalidValue);
}

}  // namespace
}  // namespace pvgpu::transport
