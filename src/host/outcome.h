// Outcome: what executing one message came to, in the two tiers of errors (STYLE.md). Either a
// CUDA result for the guest (kOk included), or a protocol violation: the guest broke the
// protocol, and its session ends with the reason logged. Every message handler returns one,
// so a violation is a value the session loop acts on, never a side effect.
#pragma once

#include <string>
#include <utility>

#include "common/status.h"

namespace pvgpu::host {

class [[nodiscard]] Outcome {
 public:
  // A result for the guest; implicit, since most handlers just return a Code.
  Outcome(Code code) : code_(code) {}  // NOLINT(google-explicit-constructor)

  static Outcome Violation(std::string reason) {
    Outcome outcome(Code::kInvalidValue);
    outcome.violation_ = true;
    outcome.reason_ = std::move(reason);
    return outcome;
  }

  bool violation() const { return violation_; }
  // The guest's result; meaningless for a violation, which the guest never sees answered.
  Code code() const { return code_; }
  // Why the session ends (violations only).
  const std::string& reason() const { return reason_; }

 private:
  Code code_;
  bool violation_ = false;
  std::string reason_;
};

inline Outcome Violation(std::string reason) { return Outcome::Violation(std::move(reason)); }

}  // namespace pvgpu::host
