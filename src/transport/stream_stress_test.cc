// The remote channel under mixed load, over real loopback sockets, plain TCP and TLS: several
// threads post messages small and large while another makes round trips and another waits for
// fences, the way a guest's streams, copies and synchronizes share one connection. Every
// message is checked. Heartbeats are set far beyond the waits' limits, so a message that sits
// in a queue without anyone moving it (a lost wake-up, a flow-control deadlock) shows as a
// timed-out wait instead of being rescued by the next heartbeat.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "transport/tcp_test_util.h"
#include "transport/test_util.h"
#include "transport/tls_test_pki.h"

namespace pvgpu::transport {
namespace {

// Generous: a healthy channel answers in micro- to milliseconds, even under sanitizers.
constexpr int kWaitMs = 20000;

// What each message starts with; the rest is the check pattern of `seq`.
struct Head {
  char kind;       // 'P' post (no answer), 'S' round trip, 'Q' quit
  uint32_t reply;  // 'S': the answer's size
  uint64_t seq;    // unique per message, for the pattern
};

std::vector<uint8_t> Message(char kind, uint64_t seq, size_t size, uint32_t reply = 0) {
  std::vector<uint8_t> bytes = testing::Pattern(seq, std::max(size, sizeof(Head)));
  const Head head{kind, reply, seq};
  std::memcpy(bytes.data(), &head, sizeof(head));
  return bytes;
}

bool Intact(const std::vector<uint8_t>& bytes, Head* head) {
  if (bytes.size() < sizeof(Head)) return false;
  std::memcpy(head, bytes.data(), sizeof(*head));
  const std::vector<uint8_t> expected = testing::Pattern(head->seq, bytes.size());
  return std::equal(bytes.begin() + sizeof(Head), bytes.end(), expected.begin() + sizeof(Head));
}

void Spin(std::chrono::nanoseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
  }
}

class StreamStress : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    RemoteOptions host;
    RemoteOptions guest;
    host.heartbeat_ms = guest.heartbeat_ms = 60000;
    host.dead_after_ms = guest.dead_after_ms = 120000;
    std::string address = "tcp://127.0.0.1:0";
    if (GetParam()) {
      ASSERT_TRUE(testing::MakeTestPki(dir_.path(), {"127.0.0.1"}, &pki_));
      address = "tls://127.0.0.1:0";
      host.tls_cert_file = pki_.host_cert;
      host.tls_key_file = pki_.host_key;
      host.token = guest.token = testing::TestToken();
      guest.tls_ca_file = pki_.ca_cert;
    }
    pair_ = testing::ConnectPair(address, host, guest);
    ASSERT_TRUE(pair_.guest && pair_.host);
  }

  // The host: checks every message, answers round trips, publishes the count of messages
  // done as its fence, until 'Q' (or a failure, reported).
  void Serve() {
    std::vector<uint8_t> message;
    uint64_t done = 0;
    for (;;) {
      Status received = pair_.host->Receive(&message, kWaitMs);
      if (!received.ok()) {
        ADD_FAILURE() << "host: " << received.ToString() << " after " << done << " messages";
        return;
      }
      Head head;
      if (!Intact(message, &head)) {
        ADD_FAILURE() << "host: corrupt message after " << done;
        return;
      }
      if (head.kind == 'Q') return;
      if (head.kind == 'S') {
        Status sent = pair_.host->Send(Message('R', head.seq, head.reply));
        if (!sent.ok()) {
          ADD_FAILURE() << "host send: " << sent.ToString();
          return;
        }
        // The session's bookkeeping between a reply and its fence takes a few microseconds;
        // varying it sweeps the fence's wake-up across the I/O thread's own wake-up.
        Spin(std::chrono::nanoseconds(head.seq * 397 % 12000));
      }
      pair_.host->PublishFence(++done);
    }
  }

  // Runs Serve on a thread; on destruction (also after a failed ASSERT) tells it to quit and
  // joins it. A host stuck behind a stalled channel gives up after kWaitMs by itself.
  class Host {
   public:
    explicit Host(StreamStress* test) : test_(test), thread_([test] { test->Serve(); }) {}
    ~Host() {
      (void)test_->pair_.guest->Send(Message('Q', 0, sizeof(Head)));
      thread_.join();
    }

   private:
    StreamStress* test_;
    std::thread thread_;
  };

  testing::TempDir dir_;
  testing::TestPki pki_;
  testing::RemotePair pair_;
};

TEST_P(StreamStress, MixedTrafficNeverStalls) {
  constexpr int kPosters = 2;
  constexpr int kPostsEach = 3000;
  constexpr int kRoundTrips = 1500;
  constexpr int kFenceWaits = 400;
  Host host(this);
  std::atomic<uint64_t> next_seq{1};
  std::atomic<uint64_t> sent{0};  // messages whose Send returned
  std::atomic<bool> failed{false};
  auto send = [&](const std::vector<uint8_t>& message, const char* who) {
    Status status = pair_.guest->Send(message);
    if (!status.ok()) {
      ADD_FAILURE() << who << ": " << status.ToString();
      failed = true;
      return false;
    }
    sent.fetch_add(1);
    return true;
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < kPosters; ++p) {
    threads.emplace_back([&, p] {
      std::mt19937 random(p + 1);
      for (int i = 0; i < kPostsEach && !failed; ++i) {
        // Mostly launch-sized records, now and then a bulk chunk of up to 1 MiB.
        const size_t size =
            random() % 64 == 0 ? (64u << 10) + random() % (960u << 10) : 16 + random() % 240;
        if (!send(Message('P', next_seq.fetch_add(1), size), "poster")) return;
        if (random() % 500 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  threads.emplace_back([&] {  // round trips: synchronous calls
    std::mt19937 random(99);
    std::vector<uint8_t> reply;
    for (int i = 0; i < kRoundTrips && !failed; ++i) {
      const uint64_t seq = next_seq.fetch_add(1);
      const uint32_t size = random() % 16 == 0 ? (1u << 20) : 16 + random() % 64;
      if (!send(Message('S', seq, 24 + random() % 64, size), "caller")) return;
      Status received = pair_.guest->Receive(&reply, kWaitMs);
      Head head;
      if (!received.ok() || !Intact(reply, &head) || head.seq != seq || reply.size() != size) {
        ADD_FAILURE() << "round trip " << i << ": " << received.ToString() << " (a stall?)";
        failed = true;
        return;
      }
    }
  });
  threads.emplace_back([&] {  // synchronizes: wait for everything sent so far
    for (int i = 0; i < kFenceWaits && !failed; ++i) {
      const uint64_t target = sent.load();
      Status waited = pair_.guest->WaitFence(target, kWaitMs);
      if (!waited.ok()) {
        ADD_FAILURE() << "fence " << target << ": " << waited.ToString() << " (a stall?)";
        failed = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  for (auto& thread : threads) thread.join();
  const uint64_t total = sent.load();
  if (!failed) {
    EXPECT_TRUE(pair_.guest->WaitFence(total, kWaitMs).ok()) << "final fence " << total;
    EXPECT_EQ(pair_.guest->ReadFence(), total);
  }
}

// Synchronous calls one after another, each answered with a reply and then a fence, as the
// host's session does for every call: nothing else on the wire rescues a wake-up that the
// host's or the guest's I/O thread misses.
TEST_P(StreamStress, RoundTripsWithFencesNeverStall) {
  constexpr int kRoundTrips = 20000;
  Host host(this);
  std::vector<uint8_t> reply;
  for (int i = 1; i <= kRoundTrips; ++i) {
    ASSERT_TRUE(pair_.guest->Send(Message('S', i, sizeof(Head) + i % 32, 4 + i % 64)).ok());
    Status received = pair_.guest->Receive(&reply, kWaitMs);
    Head head;
    ASSERT_TRUE(received.ok()) << "round trip " << i << ": " << received.ToString() << " (a stall)";
    ASSERT_TRUE(Intact(reply, &head) && head.seq == static_cast<uint64_t>(i)) << i;
  }
  EXPECT_TRUE(pair_.guest->WaitFence(kRoundTrips, kWaitMs).ok());
}

INSTANTIATE_TEST_SUITE_P(Schemes, StreamStress, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "tls" : "tcp"; });

}  // namespace
}  // namespace pvgpu::transport
