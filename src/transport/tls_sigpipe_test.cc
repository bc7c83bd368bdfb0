// A TLS channel whose peer is gone must fail the guest's calls, never raise SIGPIPE: OpenSSL's
// socket BIO writes with write(2), and SIGPIPE's default action would kill the application
// (seen when a remote host was killed under a busy guest). The peer here closes the connection
// right after the handshake; the guest then keeps sending, through an endpoint (its I/O thread
// or the caller's thread writes) and straight on the stream from the test's own thread, where
// SIGPIPE is not blocked. Without the protection the test binary dies of SIGPIPE (exit status
// 141), every time.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "transport/tcp_endpoint.h"
#include "transport/test_util.h"
#include "transport/tls_stream.h"
#include "transport/tls_test_pki.h"

namespace pvgpu::transport {
namespace {

using internal::TlsContext;

void SetNonBlocking(int fd) {
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

// A TLS connection on loopback, both ends through the handshake: the guest's stream in
// *client, the host's in *server.
void ConnectPair(StatusOr<std::unique_ptr<internal::ByteStream>>* client,
                 StatusOr<std::unique_ptr<internal::ByteStream>>* server) {
  // The test is meaningless if SIGPIPE is ignored, as some runners set it.
  struct sigaction current {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &current), 0);
  ASSERT_EQ(current.sa_handler, SIG_DFL) << "SIGPIPE must have its default action here";

  testing::TempDir dir;
  testing::TestPki pki;
  ASSERT_TRUE(testing::MakeTestPki(dir.path(), {"127.0.0.1"}, &pki));
  auto server_ctx = TlsContext::ForServer(pki.host_cert, pki.host_key);
  auto client_ctx = TlsContext::ForClient(pki.ca_cert);
  ASSERT_TRUE(server_ctx.ok() && client_ctx.ok());

  internal::UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  internal::UniqueFd client_fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::connect(client_fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  internal::UniqueFd server_fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(server_fd.valid());
  SetNonBlocking(client_fd.get());
  SetNonBlocking(server_fd.get());

  std::thread accept([&] {
    *server = internal::TlsAccept(**server_ctx, std::move(server_fd), internal::Deadline(10000));
  });
  *client = internal::TlsConnect(**client_ctx, std::move(client_fd), "127.0.0.1",
                                 internal::Deadline(10000));
  accept.join();
  ASSERT_TRUE(client->ok()) << client->status().ToString();
  ASSERT_TRUE(server->ok()) << server->status().ToString();
}

TEST(TlsSigpipe, AResetPeerFailsSendsWithoutSigpipe) {
  StatusOr<std::unique_ptr<internal::ByteStream>> client = Error(Code::kUnknown, "not run");
  StatusOr<std::unique_ptr<internal::ByteStream>> server = Error(Code::kUnknown, "not run");
  ConnectPair(&client, &server);
  if (HasFatalFailure()) return;

  // The peer's process goes away: its kernel closes the socket (a FIN, as for a killed
  // pvgpud). The guest's next write is answered with a reset, and the one after that fails
  // with EPIPE, which is where SIGPIPE was raised.
  server->reset();

  internal::StreamEndpointOptions options;
  options.description = "tls sigpipe test";
  auto endpoint = internal::MakeStreamEndpoint(std::move(client).value(), options);
  const std::vector<uint8_t> message(64 << 10, 0x5a);
  const std::span<const uint8_t> part(message);
  Status sent = Status::Ok();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (sent.ok() && std::chrono::steady_clock::now() < give_up) {
    sent = endpoint->Send({&part, 1});
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(sent.ok()) << "sends to a reset peer kept succeeding";
  EXPECT_EQ(sent.code(), Code::kDeviceUnavailable) << sent.ToString();
  endpoint->Close();
  endpoint.reset();  // the I/O thread's last writes (close_notify) happen here
}

// The endpoint's callers write on their own threads (a bulk Send, a waiter flushing the
// queue), where SIGPIPE is not blocked: the stream itself must not raise it. Here the test's
// thread writes to the stream of a reset peer directly, with nothing blocked, until the
// write fails.
TEST(TlsSigpipe, StreamWritesOnACallersThreadRaiseNoSigpipe) {
  StatusOr<std::unique_ptr<internal::ByteStream>> client = Error(Code::kUnknown, "not run");
  StatusOr<std::unique_ptr<internal::ByteStream>> server = Error(Code::kUnknown, "not run");
  ConnectPair(&client, &server);
  if (HasFatalFailure()) return;
  sigset_t blocked;
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &blocked), 0);
  ASSERT_EQ(sigismember(&blocked, SIGPIPE), 0) << "SIGPIPE must not be blocked here";
  server->reset();

  internal::ByteStream& stream = **client;
  const std::vector<uint8_t> message(64 << 10, 0x5a);
  internal::IoResult result;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < give_up) {
    result = stream.Write(message.data(), message.size());
    if (result.kind == internal::IoResult::kDone) result = stream.Flush();
    if (result.kind == internal::IoResult::kEof || result.kind == internal::IoResult::kError) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(result.kind == internal::IoResult::kError || result.kind == internal::IoResult::kEof)
      << "writes to a reset peer kept succeeding";
  sigset_t pending;
  ASSERT_EQ(sigpending(&pending), 0);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

}  // namespace
}  // namespace pvgpu::transport
