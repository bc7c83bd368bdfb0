#include "tests/hostile/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pvgpu::hostile {

namespace {

constexpr char kStatusGuestName[] = "hostile-status";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

[[noreturn]] void Exec(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

std::string DaemonPath() { return PVGPU_HOSTILE_BIN_DIR "/pvgpud"; }
std::string GuestLibraryDir() { return PVGPU_HOSTILE_LIB_DIR; }

bool Await(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// --- Daemon -----------------------------------------------------------------------------------

Daemon::Daemon(std::vector<std::string> extra_args) : args_(std::move(extra_args)) {
  char dir[] = "/tmp/pvgpu-hostile-XXXXXX";
  if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = dir;
  socket_ = dir_ + "/pvgpud.sock";
  log_ = dir_ + "/pvgpud.log";
  Start();
}

Daemon::~Daemon() {
  if (pid_ > 0) Kill(SIGTERM);
  // Keep the directory (and its log) when asked, for post-mortems of failed runs.
  if (std::getenv("PVGPU_KEEP_LOGS") == nullptr) {
    std::remove(log_.c_str());
    std::remove(socket_.c_str());
    rmdir(dir_.c_str());
  }
}

void Daemon::Start() {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> argv = {DaemonPath(), "--listen", address(), "--log-file", log_,
                                   "--log-level", "info", "--ready-fd", "3"};
  argv.insert(argv.end(), args_.begin(), args_.end());
  pid_ = fork();
  if (pid_ == 0) {
    dup2(ready[1], 3);  // dup2 clears FD_CLOEXEC on the copy
    Exec(argv);
  }
  close(ready[1]);
  pollfd p{ready[0], POLLIN, 0};
  char text[16] = {};
  const bool ok = poll(&p, 1, 30000) == 1 && read(ready[0], text, sizeof(text)) > 0;
  close(ready[0]);
  if (!ok) {
    Kill(SIGKILL);
    throw std::runtime_error("pvgpud did not become ready; log:\n" + Log());
  }
}

void Daemon::Restart() {
  if (pid_ > 0) Kill(SIGKILL);
  Start();
}

void Daemon::Kill(int signal) {
  if (pid_ <= 0) return;
  ::kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Daemon::Log() const { return ReadFile(log_); }

bool Daemon::AwaitLog(const std::string& text) const {
  return Await([&] { return Log().find(text) != std::string::npos; }, std::chrono::seconds(20));
}

size_t Daemon::CountInLog(const std::string& text) const {
  const std::string log = Log();
  size_t count = 0;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++count;
  return count;
}

nlohmann::json Daemon::Status() const {
  RawGuest guest(socket_);
  protocol::HelloRequest hello;
  hello.protocol_version = protocol::kProtocolVersion;
  hello.guest_pid = static_cast<uint32_t>(getpid());
  std::strncpy(hello.guest_name, kStatusGuestName, sizeof(hello.guest_name) - 1);
  if (guest.Call(hello) != 0) throw std::runtime_error("HostStatus session: Hello refused");
  std::vector<uint8_t> payload;
  if (guest.Call(protocol::HostStatusRequest{}, {}, nullptr, &payload) != 0) {
    throw std::runtime_error("HostStatus refused");
  }
  guest.Send(protocol::GoodbyeRequest{});
  return nlohmann::json::parse(payload.begin(), payload.end());
}

uint64_t Daemon::AdapterMemoryUsed() const {
  uint64_t used = 0;
  const nlohmann::json status = Status();  // kept alive for the loop (a temporary would not be)
  for (const auto& adapter : status["adapters"]) used += adapter["memory_used"].get<uint64_t>();
  return used;
}

size_t Daemon::GuestSessions() const {
  size_t count = 0;
  const nlohmann::json status = Status();
  for (const auto& session : status["sessions"]) {
    if (session["name"] != kStatusGuestName) ++count;
  }
  return count;
}

uint64_t Daemon::RssKib() const {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid_) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

uint64_t Daemon::CpuTicks() const {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid_) + "/stat");
  // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int index = 3; in >> field; ++index) {
    if (index == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (index == 15) {
      stime = std::strtoull(field.c_str(), nullptr, 10);
      break;
    }
  }
  return utime + stime;
}

// --- RawGuest ---------------------------------------------------------------------------------

RawGuest::RawGuest(const std::string& socket_path) {
  auto endpoint = transport::ConnectUnix(socket_path);
  if (!endpoint.ok()) throw std::runtime_error("connect: " + endpoint.status().ToString());
  endpoint_ = std::move(endpoint).value();
}

void RawGuest::SendBytes(std::span<const uint8_t> bytes) {
  // A send may fail once the host has hung up on us; the tests check the outcome elsewhere.
  (void)endpoint_->Send(bytes);
}

void RawGuest::SendOp(uint32_t op, std::span<const uint8_t> fixed,
                      std::span<const uint8_t> payload, uint32_t flags) {
  protocol::MessageHeader header;
  header.op = op;
  header.flags = flags;
  header.seq = ++seq_;
  std::span<const uint8_t> parts[] = {
      {reinterpret_cast<const uint8_t*>(&header), sizeof(header)}, fixed, payload};
  (void)endpoint_->Send(parts);
}

int32_t RawGuest::Hello() {
  protocol::HelloRequest hello;
  hello.protocol_version = protocol::kProtocolVersion;
  hello.guest_pid = static_cast<uint32_t>(getpid());
  std::strncpy(hello.guest_name, "hostile-raw", sizeof(hello.guest_name) - 1);
  return Call(hello);
}

bool RawGuest::ReceiveReply(std::vector<uint8_t>* message) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    Status received = endpoint_->Receive(message, 1000);
    if (received.code() == Code::kNotReady) continue;
    if (!received.ok() || message->size() < sizeof(protocol::MessageHeader)) return false;
    protocol::MessageHeader header;
    std::memcpy(&header, message->data(), sizeof(header));
    if ((header.flags & protocol::kFlagReply) != 0 && header.seq == seq_) return true;
  }
  return false;
}

bool RawGuest::AwaitClosed() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<uint8_t> message;
  while (std::chrono::steady_clock::now() < deadline) {
    Status received = endpoint_->Receive(&message, 250);
    if (received.code() == Code::kDeviceUnavailable) return true;
    if (!received.ok() && received.code() != Code::kNotReady) return true;
  }
  return false;
}

// --- GuestProcess -----------------------------------------------------------------------------

GuestProcess::GuestProcess(const std::string& host_address, const std::vector<std::string>& argv) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    setenv("PVGPU_HOST", host_address.c_str(), 1);
    setenv("LD_LIBRARY_PATH", GuestLibraryDir().c_str(), 1);
    Exec(argv);
  }
  close(in[0]);
  close(out[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
}

GuestProcess::~GuestProcess() {
  if (pid_ > 0) Kill(SIGKILL);
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

void GuestProcess::WriteLine(const std::string& line) {
  const std::string text = line + "\n";
  (void)!write(stdin_fd_, text.data(), text.size());
}

std::string GuestProcess::ReadLine(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(stdout_fd_, chunk, sizeof(chunk));
    if (n <= 0) return "";
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

int GuestProcess::Wait() {
  if (stdin_fd_ >= 0) {
    close(stdin_fd_);
    stdin_fd_ = -1;
  }
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_code_ = ExitCode(status);
    pid_ = -1;
  }
  return exit_code_;
}

void GuestProcess::Kill(int signal) {
  if (pid_ <= 0) return;
  ::kill(pid_, signal);
  Wait();
}

}  // namespace pvgpu::hostile
