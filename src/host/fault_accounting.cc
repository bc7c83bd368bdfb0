#include "host/fault_accounting.h"

#include "common/log.h"
#include "transport/channel.h"

namespace pvgpu::host {

void FaultAccounting::Record(ContextErrors& errors, const Status& status, const char* what) {
  ++recorded_;
  PublishCount();
  if (IsStickyError(status.code())) {
    if (errors.sticky == Code::kOk) errors.sticky = status.code();
    PVGPU_INFO("session " << session_id_ << ": " << what
                          << " faulted, context is now unusable: " << status.ToString());
  } else if (errors.pending == Code::kOk) {
    errors.pending = status.code();
    PVGPU_DEBUG("session " << session_id_ << ": " << what << " failed: " << status.ToString());
  }
}

void FaultAccounting::SetAsynchronousContexts(size_t count) {
  asynchronous_contexts_ = count;
  PublishCount();
}

void FaultAccounting::PublishCount() {
  publish_(asynchronous_contexts_ != 0 ? transport::Endpoint::kErrorCountUnknown : recorded_);
}

}  // namespace pvgpu::host
