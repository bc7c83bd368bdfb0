#include "transport/tcp_test_util.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace pvgpu::transport::testing {

std::string TestToken() { return "0123456789abcdef0123456789abcdef"; }

RemotePair ConnectPair(const std::string& listen_address, const RemoteOptions& host,
                       const RemoteOptions& guest, const std::string& connect_host) {
  RemotePair pair;
  auto listener = RemoteListener::Listen(listen_address, host);
  if (!listener.ok()) {
    ADD_FAILURE() << listener.status().ToString();
    return pair;
  }
  pair.listener = std::move(listener).value();
  std::string address = pair.listener->address();
  if (!connect_host.empty()) {
    const size_t scheme = address.find("://") + 3;
    address = address.substr(0, scheme) + connect_host + address.substr(address.rfind(':'));
  }
  auto connected = ConnectRemote(address, guest);
  if (!connected.ok()) {
    ADD_FAILURE() << "connect " << address << ": " << connected.status().ToString();
    return pair;
  }
  pair.guest = std::move(connected).value();
  auto accepted = pair.listener->Accept();
  if (!accepted.ok()) {
    ADD_FAILURE() << accepted.status().ToString();
    pair.guest.reset();
    return pair;
  }
  pair.host = std::move(accepted).value();
  return pair;
}

FakeHost::FakeHost(std::vector<uint8_t> after_setup) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 4) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "fake host: " << std::strerror(errno);
    return;
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this, bytes = std::move(after_setup)] {
    conn_fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn_fd_ < 0) return;
    uint8_t record[16];
    uint32_t token_length = 0;
    if (::recv(conn_fd_, record, sizeof(record), MSG_WAITALL) != sizeof(record)) return;
    std::memcpy(&token_length, record + 12, sizeof(token_length));
    std::vector<uint8_t> token(token_length);
    if (token_length > 0) ::recv(conn_fd_, token.data(), token.size(), MSG_WAITALL);
    uint8_t reply[16] = {'P', 'V', 'G', 'P', 'U', 'T', 'C', 'P'};
    const uint32_t ok = 0;
    const uint32_t max_message = 4u << 20;
    std::memcpy(reply + 8, &ok, 4);
    std::memcpy(reply + 12, &max_message, 4);
    (void)!::send(conn_fd_, reply, sizeof(reply), MSG_NOSIGNAL);
    if (!bytes.empty()) (void)!::send(conn_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  });
}

FakeHost::~FakeHost() {
  if (thread_.joinable()) {
    ::shutdown(listen_fd_, SHUT_RDWR);  // in case no guest ever came
    thread_.join();
  }
  if (conn_fd_ >= 0) ::close(conn_fd_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

}  // namespace pvgpu::transport::testing
