// Session handlers: modules, launches, streams and events.
#include <chrono>

#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Code Session::Execute(const ModuleLoadRequest& request, std::span<const uint8_t> image) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  if (request.module == 0 || ctx->modules.count(request.module) != 0) {
    return Fatal("ModuleLoad: module handle reused or zero");
  }
  if (request.image_kind < 1 || request.image_kind > 4) return Fatal("ModuleLoad: bad image kind");
  ModuleDescription description;
  Code code = ctx->errors.sticky;
  std::unique_ptr<adapters::Module> module;
  if (code == Code::kOk) {
    auto loaded = ctx->impl->LoadModule(static_cast<ImageKind>(request.image_kind), image,
                                        &description.error_log, &description.info_log);
    if (loaded.ok()) {
      module = std::move(loaded).value();
    } else {
      code = loaded.status().code();
      if (description.error_log.empty()) description.error_log = loaded.status().message();
      PVGPU_DEBUG("session " << id_ << ": module load failed: " << loaded.status().ToString());
    }
  }
  if (module && policy_.memory_quota != 0 && UsedBytes() > policy_.memory_quota) {
    // The adapter allocated the globals while loading and a module does not free them: give
    // them back here, or they would count against the quota until the context ends.
    for (const auto& g : module->globals()) (void)ctx->impl->Free(g.dptr);
    module.reset();  // its globals would exceed the quota
    code = Code::kOutOfMemory;
    description.error_log = "module globals exceed the session's memory quota";
  }
  if (module) {
    description.kernels = module->kernels();
    description.globals = module->globals();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& g : module->globals()) {
      (void)ctx->allocations.Insert(g.dptr, g.size == 0 ? 1 : g.size, {true});
    }
    ctx->modules[request.module] = std::move(module);
  }
  const size_t limit = request.log_limit;
  if (description.error_log.size() > limit) description.error_log.resize(limit);
  if (description.info_log.size() > limit) description.info_log.resize(limit);
  ModuleLoadReply reply;
  reply.result = static_cast<int32_t>(code);
  SendReply(reply, description.Encode());
  return code;
}

Code Session::Execute(const ModuleUnloadRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  auto it = ctx->modules.find(request.module);
  if (it == ctx->modules.end()) return Fatal("ModuleUnload: unknown module handle");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& g : it->second->globals()) {
    ctx->allocations.erase(g.dptr);
    (void)ctx->impl->Free(g.dptr);
  }
  ctx->modules.erase(it);
  return Code::kOk;
}

Code Session::Execute(const LaunchKernelRequest& request, std::span<const uint8_t> params) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr || !ValidStream(*ctx, request.stream)) return Code::kInvalidContext;
  auto it = ctx->modules.find(request.module);
  if (it == ctx->modules.end()) return Fatal("LaunchKernel: unknown module handle");
  adapters::Module& module = *it->second;
  if (request.kernel >= module.kernels().size()) return Fatal("LaunchKernel: no such kernel");
  const adapters::KernelInfo& kernel = module.kernels()[request.kernel];
  if (params.size() != kernel.param_bytes) {
    return Fatal("LaunchKernel: parameter buffer of " + std::to_string(params.size()) +
                 " bytes for a kernel taking " + std::to_string(kernel.param_bytes));
  }
  if (ctx->errors.sticky != Code::kOk) return ctx->errors.sticky;
  adapters::LaunchConfig config;
  config.grid = {request.grid[0], request.grid[1], request.grid[2]};
  config.block = {request.block[0], request.block[1], request.block[2]};
  config.shared_bytes = request.shared_bytes;
  std::string printed;
  auto launch = [&] {
    return ctx->impl->Launch(module, request.kernel, config, params,
                             [&printed](std::string_view text) { printed += text; });
  };
  // A synchronous adapter runs the kernel right here; one that never ends must not outlive
  // its guest's interest in it. Asynchronous adapters return at once and need no watch.
  Status status =
      ctx->impl->asynchronous() ? launch() : watcher_.Run(*ctx->impl, request.ctx, launch);
  if (!printed.empty()) SendPrint(request.ctx, printed);
  if (!status.ok()) RecordFault(*ctx, status.WithContext("kernel " + kernel.name), "launch");
  return status.code();
}

Code Session::Execute(const StreamCreateRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  if (request.stream == 0 || !ctx->streams.emplace(request.stream, request.flags).second) {
    return Fatal("StreamCreate: stream handle reused or zero");
  }
  return Code::kOk;
}

Code Session::Execute(const StreamDestroyRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  if (request.stream == 0 || ctx->streams.erase(request.stream) == 0) {
    return Fatal("StreamDestroy: unknown stream handle");
  }
  return Code::kOk;
}

Code Session::Execute(const StreamSynchronizeRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr || !ValidStream(*ctx, request.stream)) return Code::kInvalidContext;
  // One stream per context on the adapters: waiting for it waits for this stream too.
  SynchronizeAdapter(*ctx);
  return ctx->errors.TakeForSynchronize();
}

Code Session::Execute(const EventCreateRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  if (request.event == 0 || !ctx->events.emplace(request.event, Event{}).second) {
    return Fatal("EventCreate: event handle reused or zero");
  }
  return Code::kOk;
}

Code Session::Execute(const EventDestroyRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  if (ctx->events.erase(request.event) == 0) return Fatal("EventDestroy: unknown event handle");
  return Code::kOk;
}

Code Session::Execute(const EventRecordRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr || !ValidStream(*ctx, request.stream)) return Code::kInvalidContext;
  auto it = ctx->events.find(request.event);
  if (it == ctx->events.end()) return Fatal("EventRecord: unknown event handle");
  it->second.recorded = true;
  it->second.timestamp_ns = NowNs();
  it->second.completed_ns.reset();
  if (ctx->impl->asynchronous()) {
    // The event's time is when the work before it completed, as on a GPU.
    auto completed = std::make_shared<std::atomic<int64_t>>(0);
    it->second.completed_ns = completed;
    ctx->impl->NotifyWhenDone([completed] { completed->store(NowNs()); });
  }
  return Code::kOk;
}

Code Session::Execute(const EventElapsedTimeRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  auto start = ctx->events.find(request.start);
  auto end = ctx->events.find(request.end);
  if (start == ctx->events.end() || end == ctx->events.end()) {
    return Fatal("EventElapsedTime: unknown event handle");
  }
  if (!start->second.recorded || !end->second.recorded) return Code::kInvalidHandle;
  int64_t start_ns = start->second.timestamp_ns, end_ns = end->second.timestamp_ns;
  if (start->second.completed_ns && end->second.completed_ns) {
    SynchronizeAdapter(*ctx);  // both events complete, their callbacks run
    start_ns = start->second.completed_ns->load();
    end_ns = end->second.completed_ns->load();
  }
  EventElapsedTimeReply reply;
  reply.result = 0;
  reply.milliseconds = static_cast<float>(end_ns - start_ns) / 1e6f;
  SendReply(reply);
  return Code::kOk;
}

}  // namespace pvgpu::host
