// STAND-IN FOR THE REAL DAEMON, for the `pvgpu run` unit tests only.
//
// It implements just the part of pvgpud's command line and start-up contract that `pvgpu run`
// depends on: --listen unix:PATH, --adapters, --ready-fd N (write "ready\n", close) and
// --log-file, then it waits for SIGTERM. It serves no requests. End-to-end tests use the real
// pvgpud.
//
// Test hooks, all from the environment:
//   FAKE_PVGPUD_RECORD  file to append "pid=<pid>" and "args=<argv...>" to
//   FAKE_PVGPUD_MODE    "" (normal), "fail" (log an error, exit 3 before ready),
//                       "ignore-term" (ignore SIGTERM, so pvgpu must escalate to SIGKILL),
//                       "crash-on-term" (exit 9 on SIGTERM, an abnormal stop)
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  std::string listen_address, log_file;
  int ready_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--listen") listen_address = argv[i + 1];
    if (flag == "--ready-fd") ready_fd = std::atoi(argv[i + 1]);
    if (flag == "--log-file") log_file = argv[i + 1];
  }
  const char* mode_env = std::getenv("FAKE_PVGPUD_MODE");
  std::string mode = mode_env != nullptr ? mode_env : "";

  if (const char* record = std::getenv("FAKE_PVGPUD_RECORD")) {
    if (FILE* out = std::fopen(record, "a")) {
      std::fprintf(out, "pid=%d\nargs=", static_cast<int>(getpid()));
      for (int i = 1; i < argc; ++i) std::fprintf(out, "%s%s", i > 1 ? " " : "", argv[i]);
      std::fprintf(out, "\n");
      std::fclose(out);
    }
  }
  FILE* log = log_file.empty() ? nullptr : std::fopen(log_file.c_str(), "a");
  if (log == nullptr) return 2;
  std::setvbuf(log, nullptr, _IONBF, 0);

  if (mode == "fail") {
    std::fprintf(log, "fake pvgpud: adapter 'bogus' is not available\n");
    std::fprintf(stderr, "fake pvgpud: giving up\n");
    return 3;
  }
  if (listen_address.rfind("unix:", 0) != 0 || ready_fd < 0) {
    std::fprintf(log, "fake pvgpud: bad arguments\n");
    return 2;
  }
  std::string path = listen_address.substr(5);

  // Block SIGTERM before announcing readiness, so a SIGTERM sent right after "ready" waits in
  // sigwait() instead of killing us through the default action.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  if (mode == "ignore-term") {
    signal(SIGTERM, SIG_IGN);
  } else {
    sigprocmask(SIG_BLOCK, &term, nullptr);
  }

  int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0) {
    std::fprintf(log, "fake pvgpud: cannot listen on %s: %s\n", path.c_str(), std::strerror(errno));
    return 4;
  }
  std::fprintf(log, "fake pvgpud: listening on %s\n", path.c_str());
  if (write(ready_fd, "ready\n", 6) != 6) return 5;
  close(ready_fd);

  if (mode == "ignore-term") {
    while (true) pause();
  }
  int signo = 0;
  sigwait(&term, &signo);
  unlink(path.c_str());
  std::fprintf(log, "fake pvgpud: stopping\n");
  return mode == "crash-on-term" ? 9 : 0;
}
