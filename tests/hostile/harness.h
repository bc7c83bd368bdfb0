// Test harness for the hostile-guest, crash, quota and load tests: a real pvgpud process on a
// real socket, raw guests that send arbitrary bytes over the real channel, and guest programs
// (driver-API C linked against pvgpu's libcuda.so.1) run as child processes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstring>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/wire.h"
#include "transport/channel.h"

namespace pvgpu::hostile {

// Where the build put what the tests run (compile definitions from CMakeLists.txt).
std::string DaemonPath();      // build/bin/pvgpud
std::string GuestLibraryDir();  // build/lib/pvgpu (libcuda.so.1)

// Polls `condition` until it holds or `limit` passes; true when it held.
bool Await(const std::function<bool()>& condition,
           std::chrono::milliseconds limit = std::chrono::seconds(30));

// A pvgpud process with its own directory, socket and log file.
class Daemon {
 public:
  // Starts pvgpud with `extra_args` and waits until it is listening (--ready-fd).
  explicit Daemon(std::vector<std::string> extra_args = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Starts it again on the same socket and log file (after Kill).
  void Restart();
  // Sends `signal` and reaps the process.
  void Kill(int signal);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& socket_path() const { return socket_; }
  std::string address() const { return "unix:" + socket_; }
  const std::string& dir() const { return dir_; }

  std::string Log() const;
  // Waits until the log contains `text` (true) or 20 s pass (false).
  bool AwaitLog(const std::string& text) const;
  // How many times `text` occurs in the log.
  size_t CountInLog(const std::string& text) const;

  // The host's status as the daemon's own tools see it (a HostStatus request over a session
  // of our own, which therefore appears in "sessions" itself).
  nlohmann::json Status() const;
  // Sum of memory_used over the adapters.
  uint64_t AdapterMemoryUsed() const;
  // Sessions other than the one Status() opens.
  size_t GuestSessions() const;
  // VmRSS of the daemon in KiB.
  uint64_t RssKib() const;
  // CPU time (user + system) the daemon has used, in clock ticks.
  uint64_t CpuTicks() const;

 private:
  void Start();
  std::vector<std::string> args_;
  std::string dir_;
  std::string socket_;
  std::string log_;
  pid_t pid_ = -1;
};

// A guest that speaks the channel by hand: every byte it sends is the test's choice.
class RawGuest {
 public:
  explicit RawGuest(const std::string& socket_path);
  transport::Endpoint& endpoint() { return *endpoint_; }

  // Sends header + fixed + payload with the next seq (or the seq given).
  void SendBytes(std::span<const uint8_t> bytes);
  void SendOp(uint32_t op, std::span<const uint8_t> fixed,
              std::span<const uint8_t> payload = {}, uint32_t flags = 0);
  template <typename Request>
  void Send(const Request& request, std::span<const uint8_t> payload = {}, uint32_t flags = 0) {
    SendOp(static_cast<uint32_t>(Request::kOp),
         {reinterpret_cast<const uint8_t*>(&request), sizeof(request)}, payload, flags);
  }
  // Sends a request and returns its reply's result code (and payload), or -1 when no reply
  // came; asynchronous requests need flags = kFlagWantReply to be answered.
  template <typename Request>
  int32_t Call(const Request& request, std::span<const uint8_t> payload = {},
               typename Request::Reply* reply = nullptr,
               std::vector<uint8_t>* reply_payload = nullptr, uint32_t flags = 0);
  // Hello with the current protocol version; returns the result.
  int32_t Hello();
  // True when the host closes the channel within 10 s (replies and prints on the way are
  // skipped); the session has ended.
  bool AwaitClosed();
  uint64_t next_seq() const { return seq_ + 1; }
  void set_seq(uint64_t seq) { seq_ = seq; }

 private:
  bool ReceiveReply(std::vector<uint8_t>* message);
  std::unique_ptr<transport::Endpoint> endpoint_;
  uint64_t seq_ = 0;
};

template <typename Request>
int32_t RawGuest::Call(const Request& request, std::span<const uint8_t> payload,
                       typename Request::Reply* reply, std::vector<uint8_t>* reply_payload,
                       uint32_t flags) {
  Send(request, payload, flags);
  std::vector<uint8_t> message;
  if (!ReceiveReply(&message)) return -1;
  typename Request::Reply fixed;
  const size_t head = sizeof(protocol::MessageHeader);
  if (message.size() < head + sizeof(fixed)) return -1;
  std::memcpy(&fixed, message.data() + head, sizeof(fixed));
  if (reply != nullptr) *reply = fixed;
  if (reply_payload != nullptr) {
    reply_payload->assign(message.begin() + head + sizeof(fixed), message.end());
  }
  return fixed.result;
}

// A guest program run as a child process against `daemon`, its stdin a pipe and its stdout
// read line by line (stderr goes to the test's own).
class GuestProcess {
 public:
  GuestProcess(const std::string& host_address, const std::vector<std::string>& argv);
  ~GuestProcess();
  GuestProcess(const GuestProcess&) = delete;
  GuestProcess& operator=(const GuestProcess&) = delete;

  pid_t pid() const { return pid_; }
  void WriteLine(const std::string& line);
  // The next line of output; "" when the output ended or `limit` passed.
  std::string ReadLine(std::chrono::milliseconds limit = std::chrono::seconds(60));
  // Closes stdin and waits for the exit; returns the exit code (128 + N for signal N).
  int Wait();
  void Kill(int signal);

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  int exit_code_ = -1;
};

}  // namespace pvgpu::hostile
