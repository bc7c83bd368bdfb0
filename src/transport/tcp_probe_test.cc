// The path probe over real loopback sockets, plain and TLS: figures come back, bounds are
// enforced, refusals are those of any guest, and a probe never becomes a session.
#include <gtest/gtest.h>

#include "transport/channel.h"
#include "transport/tcp_test_util.h"
#include "transport/test_util.h"
#include "transport/tls_test_pki.h"

namespace pvgpu::transport {
namespace {

class PathProbe : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      ASSERT_TRUE(testing::MakeTestPki(dir_.path(), {"127.0.0.1"}, &pki_));
      host_.tls_cert_file = pki_.host_cert;
      host_.tls_key_file = pki_.host_key;
      host_.token = guest_.token = testing::TestToken();
      guest_.tls_ca_file = pki_.ca_cert;
    }
    auto listener =
        RemoteListener::Listen(GetParam() ? "tls://127.0.0.1:0" : "tcp://127.0.0.1:0", host_);
    ASSERT_TRUE(listener.ok()) << listener.status().ToString();
    listener_ = std::move(listener).value();
  }

  testing::TempDir dir_;
  testing::TestPki pki_;
  RemoteOptions host_;
  RemoteOptions guest_;
  std::unique_ptr<RemoteListener> listener_;
};

TEST_P(PathProbe, MeasuresTheRawPath) {
  auto probe = RemotePathProbe::Connect(listener_->address(), guest_);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  if (GetParam()) {
    EXPECT_EQ((*probe)->security().rfind("TLS_", 0), 0u) << (*probe)->security();
  } else {
    EXPECT_EQ((*probe)->security(), "");
  }
  for (int round = 0; round < 2; ++round) {  // commands follow one another on one connection
    auto round_trip = (*probe)->RoundTripMicros(200);
    ASSERT_TRUE(round_trip.ok()) << round_trip.status().ToString();
    EXPECT_GT(*round_trip, 0.0);
    auto up = (*probe)->SendBytesPerSecond(8u << 20);
    ASSERT_TRUE(up.ok()) << up.status().ToString();
    auto down = (*probe)->ReceiveBytesPerSecond((8u << 20) + 1);
    ASSERT_TRUE(down.ok()) << down.status().ToString();
    EXPECT_GT(*up, 1e6);
    EXPECT_GT(*down, 1e6);
  }
  EXPECT_EQ((*probe)->RoundTripMicros(0).status().code(), Code::kInvalidValue);
  EXPECT_EQ((*probe)->SendBytesPerSecond(0).status().code(), Code::kInvalidValue);
  EXPECT_EQ((*probe)->ReceiveBytesPerSecond(1ull << 40).status().code(), Code::kInvalidValue);
}

TEST_P(PathProbe, IsNeverASessionAndTheListenerGoesOn) {
  {
    auto probe = RemotePathProbe::Connect(listener_->address(), guest_);
    ASSERT_TRUE(probe.ok()) << probe.status().ToString();
    ASSERT_TRUE((*probe)->RoundTripMicros(10).ok());
  }
  // The next connection Accept returns is the guest's, not the probe's.
  auto guest = ConnectRemote(listener_->address(), guest_);
  ASSERT_TRUE(guest.ok()) << guest.status().ToString();
  auto host = listener_->Accept();
  ASSERT_TRUE(host.ok());
  ASSERT_TRUE((*guest)->Send(testing::Pattern(5, 100)).ok());
  std::vector<uint8_t> message;
  ASSERT_TRUE((*host)->Receive(&message, 10000).ok());
  EXPECT_TRUE(testing::MatchesPattern(message, 5));
}

// tls:// only: a plain tcp:// listener asks for no token.
class TlsPathProbe : public PathProbe {};

TEST_P(TlsPathProbe, NeedsWhatAGuestNeeds) {
  RemoteOptions wrong = guest_;
  wrong.token = "not-the-right-token-at-all";
  auto probe = RemotePathProbe::Connect(listener_->address(), wrong);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.status().code(), Code::kNotPermitted);
  EXPECT_NE(probe.status().message().find("token rejected"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Schemes, PathProbe, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "tls" : "tcp"; });
INSTANTIATE_TEST_SUITE_P(Tls, TlsPathProbe, ::testing::Values(true));

}  // namespace
}  // namespace pvgpu::transport
