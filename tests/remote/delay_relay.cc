// A TCP relay that adds a fixed delay to each direction of every connection, for a link with
// a real propagation delay where the kernel cannot make one (no sch_netem for `tc netem`).
//
//   delay_relay LISTEN_IP:PORT TARGET_IP:PORT DELAY_US
//
// Accepts connections on LISTEN (port 0: any free port), connects each to TARGET and forwards
// the bytes both ways, each read held back until DELAY_US microseconds after it arrived. Bytes
// keep their order and the rate is the downstream link's (reads and writes overlap: a delay
// line, not a stop-and-wait): what `netem delay` does to a link, at user-space cost (so it
// belongs in front of a link slower than the machine, as remote_test.sh's shaped case puts it).
// Prints "relay listening on IP:PORT" once it accepts, then serves until killed. A direction
// whose source ends (EOF) ends its destination's writing side once its delayed bytes are
// written; an error on either socket ends the connection. Up to 64 MiB wait per direction,
// beyond which the relay stops reading and TCP pushes back on the sender.
//
// It only forwards bytes: TLS passes through untouched (the guest verifies the host's
// certificate as if it had connected directly, so the certificate must name LISTEN_IP).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadBytes = 256 * 1024;
constexpr size_t kMaxQueued = 64 << 20;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "delay_relay: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

sockaddr_in ParseAddress(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "delay_relay: %s is not IP:PORT\n", text.c_str());
    std::exit(2);
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(std::atoi(text.c_str() + colon + 1)));
  if (inet_pton(AF_INET, text.substr(0, colon).c_str(), &address.sin_addr) != 1) {
    std::fprintf(stderr, "delay_relay: %s is not an IPv4 address\n", text.c_str());
    std::exit(2);
  }
  return address;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// One direction: bytes read from `from` at time t are written to `to` at t + delay.
class DelayLine {
 public:
  DelayLine(int from, int to, Clock::duration delay) : from_(from), to_(to), delay_(delay) {}

  void Run() {
    std::thread writer([this] { Write(); });
    Read();
    writer.join();
  }

 private:
  struct Chunk {
    Clock::time_point due;
    std::vector<char> bytes;  // empty: the source ended
  };

  void Read() {
    for (;;) {
      std::vector<char> buffer(kReadBytes);
      ssize_t got = recv(from_, buffer.data(), buffer.size(), 0);
      if (got < 0 && errno == EINTR) continue;
      buffer.resize(got > 0 ? static_cast<size_t>(got) : 0);
      std::unique_lock lock(mutex_);
      room_.wait(lock, [&] { return queued_ < kMaxQueued || failed_; });
      if (failed_) return;
      queued_ += buffer.size();
      queue_.push_back(Chunk{Clock::now() + delay_, std::move(buffer)});
      ready_.notify_one();
      if (got <= 0) return;  // EOF or error: the writer passes it on after the delay
    }
  }

  void Write() {
    for (;;) {
      Chunk chunk;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty(); });
        chunk = std::move(queue_.front());
        queue_.pop_front();
      }
      std::this_thread::sleep_until(chunk.due);
      if (chunk.bytes.empty()) {
        shutdown(to_, SHUT_WR);
        return;
      }
      size_t done = 0;
      while (done < chunk.bytes.size()) {
        ssize_t put = send(to_, chunk.bytes.data() + done, chunk.bytes.size() - done, MSG_NOSIGNAL);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) {
          // The destination is gone: stop reading its source too.
          shutdown(from_, SHUT_RDWR);
          std::lock_guard lock(mutex_);
          failed_ = true;
          room_.notify_all();
          return;
        }
        done += static_cast<size_t>(put);
      }
      std::lock_guard lock(mutex_);
      queued_ -= chunk.bytes.size();
      room_.notify_one();
    }
  }

  const int from_, to_;
  const Clock::duration delay_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<Chunk> queue_;
  size_t queued_ = 0;
  bool failed_ = false;
};

void Relay(int guest, sockaddr_in target, Clock::duration delay) {
  int host = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (host < 0 || connect(host, reinterpret_cast<sockaddr*>(&target), sizeof target) != 0) {
    std::fprintf(stderr, "delay_relay: connecting to the target: %s\n", std::strerror(errno));
    if (host >= 0) close(host);
    close(guest);
    return;
  }
  NoDelay(guest);
  NoDelay(host);
  DelayLine to_host(guest, host, delay), to_guest(host, guest, delay);
  std::thread up([&] { to_host.Run(); });
  to_guest.Run();
  up.join();
  close(host);
  close(guest);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: delay_relay LISTEN_IP:PORT TARGET_IP:PORT DELAY_US\n");
    return 2;
  }
  sockaddr_in listen_address = ParseAddress(argv[1]);
  sockaddr_in target = ParseAddress(argv[2]);
  auto delay = std::chrono::microseconds(std::atol(argv[3]));

  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) Die("socket");
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listener, reinterpret_cast<sockaddr*>(&listen_address), sizeof listen_address) != 0) {
    Die(std::string("bind ") + argv[1]);
  }
  if (listen(listener, 64) != 0) Die("listen");
  socklen_t length = sizeof listen_address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&listen_address), &length);
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &listen_address.sin_addr, ip, sizeof ip);
  std::printf("relay listening on %s:%u\n", ip, ntohs(listen_address.sin_port));
  std::fflush(stdout);

  for (;;) {
    int guest = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (guest < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      Die("accept");
    }
    std::thread(Relay, guest, target, delay).detach();
  }
}
