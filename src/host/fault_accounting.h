// Fault accounting: what a context's failed work leaves for the guest to see, and the count of
// recorded faults the session publishes so that a guest's synchronizing call can tell, by
// reading shared memory, whether it must ask the host for an error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"

namespace pvgpu::host {

// The errors of one context, as CUDA reports them.
struct ContextErrors {
  Code sticky = Code::kOk;   // a fault poisons the context, as on hardware
  Code pending = Code::kOk;  // the first asynchronous error not yet reported

  // What a synchronizing call returns: the sticky fault, else the pending error, which it
  // clears (CUDA reports an asynchronous error once).
  Code TakeForSynchronize() {
    if (sticky != Code::kOk) return sticky;
    const Code taken = pending;
    pending = Code::kOk;
    return taken;
  }
};

class FaultAccounting {
 public:
  using Publish = std::function<void(uint64_t)>;
  // `publish` stores the count where the guest reads it (transport::Endpoint::PublishErrorCount).
  FaultAccounting(uint32_t session_id, Publish publish)
      : session_id_(session_id), publish_(std::move(publish)) {}

  // Work in a context failed: a sticky error poisons it, another becomes its pending error
  // unless one is already pending. The count is published at once, before the fence covering
  // the failed message (the caller settles the message afterwards), so that a guest that sees
  // the fence also sees that something went wrong.
  void Record(ContextErrors& errors, const Status& status, const char* what);

  // How many asynchronous adapters' contexts the session holds: their work fails after its
  // message was settled, so while one exists the count cannot be vouched for and the guest is
  // told to ask (transport::Endpoint::kErrorCountUnknown).
  void SetAsynchronousContexts(size_t count);

  uint64_t recorded() const { return recorded_; }

 private:
  void PublishCount();

  const uint32_t session_id_;
  Publish publish_;
  uint64_t recorded_ = 0;
  size_t asynchronous_contexts_ = 0;
};

}  // namespace pvgpu::host
