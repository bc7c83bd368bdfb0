// Session handlers: handshake, devices and contexts.
#include <cstring>

#include "common/log.h"
#include "host/session.h"
#include "host/version.h"

namespace pvgpu::host {

using namespace protocol;

Outcome Session::Execute(const HelloRequest& request, Span) {
  if (hello_done_) return Violation("second Hello");
  HelloReply reply;
  reply.protocol_version = kProtocolVersion;
  reply.session_id = id_;
  reply.driver_version = kCudaDriverVersion;
  std::strncpy(reply.host_version, kVersionString, sizeof(reply.host_version) - 1);
  if (request.protocol_version != kProtocolVersion) {
    PVGPU_WARN("session " << id_ << ": guest speaks protocol " << request.protocol_version
                          << ", this host " << kProtocolVersion << "; refusing");
    reply.result = static_cast<int32_t>(Code::kNotSupported);
    SendReply(reply);
    said_goodbye_ = true;
    return Code::kNotSupported;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    guest_pid_ = static_cast<int>(request.guest_pid);
    guest_name_.assign(request.guest_name, strnlen(request.guest_name, sizeof(request.guest_name)));
  }
  hello_done_ = true;
  reply.adapter_count = static_cast<uint32_t>(policy_.adapters.size());
  reply.result = 0;
  SendReply(reply);
  PVGPU_INFO("session " << id_ << ": guest '" << guest_name_ << "' pid " << guest_pid_ << " sees "
                        << reply.adapter_count << " adapter(s)");
  return Code::kOk;
}

Outcome Session::Execute(const GoodbyeRequest&, Span) {
  said_goodbye_ = true;
  return Code::kOk;
}

Outcome Session::Execute(const DeviceGetInfoRequest& request, Span) {
  if (request.device >= policy_.adapters.size()) return Violation("DeviceGetInfo: no such device");
  const adapters::AdapterInfo& info = policy_.adapters[request.device]->info();
  DeviceGetInfoReply reply;
  std::strncpy(reply.name, info.name.c_str(), sizeof(reply.name) - 1);
  std::memcpy(reply.uuid, info.uuid.data(), sizeof(reply.uuid));
  reply.total_memory = info.total_memory;
  if (policy_.memory_quota != 0 && policy_.memory_quota < reply.total_memory) {
    reply.total_memory = policy_.memory_quota;
  }
  reply.pci_domain = info.pci_domain;
  reply.pci_bus = info.pci_bus;
  reply.pci_device = info.pci_device;
  reply.is_software = info.is_software ? 1 : 0;
  static_assert(sizeof(reply.attributes) / sizeof(reply.attributes[0]) ==
                adapters::kAttributeSlots);
  std::memcpy(reply.attributes, info.attributes.data(), sizeof(reply.attributes));
  reply.result = 0;
  SendReply(reply);
  return Code::kOk;
}

Outcome Session::Execute(const MemGetInfoRequest&, Span, ContextState& ctx) {
  const adapters::Adapter& adapter = *policy_.adapters[ctx.device];
  MemGetInfoReply reply;
  uint64_t total = adapter.info().total_memory;
  uint64_t used = adapter.used_bytes();
  if (policy_.memory_quota != 0 && policy_.memory_quota < total) {
    total = policy_.memory_quota;
    used = UsedBytes();
  }
  reply.total = total;
  reply.free = used < total ? total - used : 0;
  reply.result = 0;
  SendReply(reply);
  return Code::kOk;
}

Outcome Session::Execute(const CtxCreateRequest& request, Span) {
  if (request.device >= policy_.adapters.size()) return Violation("CtxCreate: no such device");
  if (budgets_.contexts.full()) {
    PVGPU_DEBUG("session " << id_ << ": context refused: " << budgets_.contexts.limit()
                           << " is the session's limit");
    return Code::kOutOfMemory;
  }
  auto impl = policy_.adapters[request.device]->CreateContext();
  if (!impl.ok()) {
    PVGPU_WARN("session " << id_ << ": context creation failed: " << impl.status().ToString());
    return impl.status().code();
  }
  (*impl)->SetShareFlow(&Flow(request.device));  // the session's share of the adapter
  {
    std::lock_guard<std::mutex> lock(mutex_);
    (void)contexts_.Add(request.ctx, budgets_, request.device, std::move(impl).value());
  }
  CountAsynchronousContexts();  // an asynchronous adapter's context: synchronization must ask
  return Code::kOk;
}

Outcome Session::Execute(const CtxDestroyRequest& request, Span, ContextState&) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    contexts_.Erase(request.ctx);  // cancels its work and frees everything it held
  }
  CountAsynchronousContexts();
  return Code::kOk;
}

Outcome Session::Execute(const CtxSynchronizeRequest&, Span, ContextState& ctx) {
  return SynchronizeContext(ctx);
}

Outcome Session::Execute(const CtxSetLimitRequest&, Span, ContextState&) {
  // Stack, printf FIFO and heap sizes need no host-side reservation on the cpu adapter; the
  // guest library keeps the values it reports back.
  return Code::kOk;
}

}  // namespace pvgpu::host
