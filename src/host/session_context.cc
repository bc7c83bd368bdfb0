// Session handlers: handshake, devices and contexts.
#include <cstring>

#include "common/log.h"
#include "host/session.h"
#include "host/version.h"

namespace pvgpu::host {

using namespace protocol;

Code Session::Execute(const HelloRequest& request, std::span<const uint8_t>) {
  if (hello_done_) return Fatal("second Hello");
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

Code Session::Execute(const GoodbyeRequest&, std::span<const uint8_t>) {
  said_goodbye_ = true;
  return Code::kOk;
}

Code Session::Execute(const DeviceGetInfoRequest& request, std::span<const uint8_t>) {
  if (request.device >= policy_.adapters.size()) return Fatal("DeviceGetInfo: no such device");
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

Code Session::Execute(const MemGetInfoRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  const adapters::Adapter& adapter = *policy_.adapters[ctx->device];
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

Code Session::Execute(const CtxCreateRequest& request, std::span<const uint8_t>) {
  if (request.ctx == 0 || contexts_.count(request.ctx) != 0) {
    return Fatal("CtxCreate: context handle reused or zero");
  }
  if (request.device >= policy_.adapters.size()) return Fatal("CtxCreate: no such device");
  auto impl = policy_.adapters[request.device]->CreateContext();
  if (!impl.ok()) {
    PVGPU_WARN("session " << id_ << ": context creation failed: " << impl.status().ToString());
    return impl.status().code();
  }
  auto state = std::make_unique<ContextState>();
  state->device = request.device;
  state->impl = std::move(impl).value();
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_[request.ctx] = std::move(state);
  CountAsynchronousContexts();  // an asynchronous adapter's context: synchronization must ask
  return Code::kOk;
}

Code Session::Execute(const CtxDestroyRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  std::lock_guard<std::mutex> lock(mutex_);
  DestroyContext(*ctx);
  contexts_.erase(request.ctx);
  CountAsynchronousContexts();
  return Code::kOk;
}

Code Session::Execute(const CtxSynchronizeRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  // Work runs in submission order, so everything before this message is done (once an
  // asynchronous adapter has been waited for; its faults surface here, as in CUDA).
  SynchronizeAdapter(*ctx);
  return ctx->errors.TakeForSynchronize();
}

Code Session::Execute(const CtxSetLimitRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  // Stack, printf FIFO and heap sizes need no host-side reservation on the cpu adapter; the
  // guest library keeps the values it reports back.
  return ctx->errors.sticky;
}

}  // namespace pvgpu::host
