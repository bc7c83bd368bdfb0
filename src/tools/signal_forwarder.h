// Passes SIGINT, SIGTERM and SIGHUP sent to `pvgpu run` on to the program it runs, so that
// `kill <pvgpu>` or a supervisor's stop request reaches the program and pvgpu can still shut
// its private host down afterwards.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace pvgpu::tools {

// One per process (signal handlers are process-wide). Installs the handlers on construction
// and restores the previous ones on destruction.
class SignalForwarder {
 public:
  SignalForwarder();
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  // Blocks the forwarded signals until Unblock(), so that a child can be spawned and
  // registered as the target without a signal slipping in between fork() and SetTarget().
  void Block();
  void Unblock();

  // Signals go to `pid` from now on; 0 stops forwarding (they are still recorded).
  void SetTarget(pid_t pid);

  // The most recent forwarded-kind signal received, or 0. Lets pvgpu abandon a private host
  // start-up when the user interrupts it before the program exists.
  int LastSignal() const;

 private:
  struct sigaction previous_[3];
  sigset_t blocked_;
  sigset_t saved_mask_;
};

// The signals a program should start with: none blocked. Called in a forked child before exec.
void ResetSignalMaskInChild();

}  // namespace pvgpu::tools
