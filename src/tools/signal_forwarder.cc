#include "tools/signal_forwarder.h"

#include <cassert>
#include <cerrno>

namespace pvgpu::tools {
namespace {

constexpr int kForwarded[3] = {SIGINT, SIGTERM, SIGHUP};

volatile sig_atomic_t g_target = 0;
volatile sig_atomic_t g_last_signal = 0;
bool g_installed = false;

void Forward(int signo, siginfo_t* info, void*) {
  int saved_errno = errno;
  g_last_signal = signo;
  // The kernel sends terminal signals (Ctrl-C, Ctrl-\, hang-up) to the whole foreground
  // process group, which includes the program; forwarding those as well would deliver them
  // twice, and programs such as Python treat a second SIGINT during cleanup as fatal.
  bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  pid_t target = g_target;
  if (target > 0 && !from_terminal) kill(target, signo);
  errno = saved_errno;
}

}  // namespace

SignalForwarder::SignalForwarder() {
  assert(!g_installed && "only one SignalForwarder may exist at a time");
  g_installed = true;
  g_target = 0;
  g_last_signal = 0;
  sigemptyset(&blocked_);
  sigemptyset(&saved_mask_);
  struct sigaction action {};
  action.sa_sigaction = Forward;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signo : kForwarded) {
    sigaddset(&blocked_, signo);
    sigaddset(&action.sa_mask, signo);
  }
  for (int i = 0; i < 3; ++i) sigaction(kForwarded[i], &action, &previous_[i]);
}

SignalForwarder::~SignalForwarder() {
  g_target = 0;
  for (int i = 0; i < 3; ++i) sigaction(kForwarded[i], &previous_[i], nullptr);
  g_installed = false;
}

void SignalForwarder::Block() { sigprocmask(SIG_BLOCK, &blocked_, &saved_mask_); }

void SignalForwarder::Unblock() { sigprocmask(SIG_SETMASK, &saved_mask_, nullptr); }

void SignalForwarder::SetTarget(pid_t pid) { g_target = pid; }

int SignalForwarder::LastSignal() const { return g_last_signal; }

void ResetSignalMaskInChild() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace pvgpu::tools
