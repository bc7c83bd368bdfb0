// Session handlers: modules and launches. A module image reaches the adapter decoded and
// validated: a link image's records are checked here, once, and the adapter gets its inputs.
#include "common/log.h"
#include "host/session.h"
#include "host/share_gate.h"
#include "protocol/link_image.h"

namespace pvgpu::host {

using namespace protocol;

namespace {

StatusOr<std::unique_ptr<adapters::Module>> LoadImage(adapters::Context& context, ImageKind kind,
                                                      std::span<const uint8_t> image,
                                                      ModuleDescription* description) {
  adapters::ModuleImage decoded = adapters::ModuleImage::Of(kind, image);
  std::vector<LinkInput> inputs;
  if (kind == ImageKind::kLinked) {
    PVGPU_ASSIGN_OR_RETURN(inputs, DecodeLinkImage(image));
    decoded.inputs = inputs;
  }
  return context.LoadModule(decoded, &description->error_log, &description->info_log);
}

}  // namespace

Outcome Session::Execute(const ModuleLoadRequest& request, Span image, ContextState& ctx) {
  return LoadModule(ctx, request.module, request.image_kind, request.log_limit, image);
}

Outcome Session::LoadModule(ContextState& ctx, uint64_t handle, uint32_t image_kind,
                            uint32_t log_limit, Span image) {
  if (image_kind < static_cast<uint32_t>(ImageKind::kPtx) ||
      image_kind > static_cast<uint32_t>(ImageKind::kLinked)) {
    return Violation("ModuleLoad: bad image kind");
  }
  ModuleDescription description;
  Code code = Code::kOk;
  std::unique_ptr<adapters::Module> module;
  if (budgets_.modules.full()) {
    code = Code::kOutOfMemory;
    description.error_log =
        "the session holds " + std::to_string(budgets_.modules.limit()) + " modules, its limit";
  } else if (image.size() > policy_.limits.upload_bytes) {
    code = Code::kOutOfMemory;
    description.error_log = ImageTooLarge(image.size());
  } else {
    auto loaded = LoadImage(*ctx.impl, static_cast<ImageKind>(image_kind), image, &description);
    if (loaded.ok()) {
      module = std::move(loaded).value();
    } else {
      code = loaded.status().code();
      if (description.error_log.empty()) description.error_log = loaded.status().message();
      PVGPU_DEBUG("session " << id_ << ": module load failed: " << loaded.status().ToString());
    }
  }
  // The adapter allocated the globals while loading and a module does not free them: a module
  // refused here gives them back, or they would count against the session until its context
  // ends.
  auto refuse = [&](const char* why) {
    for (const auto& g : module->globals()) {
      ctx.EraseAllocation(g.dptr);
      (void)ctx.impl->Free(g.dptr);
    }
    module.reset();
    code = Code::kOutOfMemory;
    description.error_log = why;
  };
  if (module && policy_.memory_quota != 0 && UsedBytes() > policy_.memory_quota) {
    refuse("module globals exceed the session's memory quota");
  }
  if (module) {
    for (const auto& g : module->globals()) {
      if (!ctx.AddAllocation(g.dptr, g.size == 0 ? 1 : g.size, true)) {
        refuse("module globals exceed the session's limit of allocations");
        break;
      }
    }
  }
  if (module) {
    description.kernels = module->kernels();
    description.globals = module->globals();
    (void)ctx.modules.Add(handle, std::move(module));
  }
  const size_t limit = log_limit;
  if (description.error_log.size() > limit) description.error_log.resize(limit);
  if (description.info_log.size() > limit) description.info_log.resize(limit);
  ModuleLoadReply reply;
  reply.result = static_cast<int32_t>(code);
  SendReply(reply, description.Encode());
  return code;
}

Outcome Session::Execute(const ModuleUnloadRequest& request, Span, ContextState& ctx,
                         adapters::Module& module) {
  for (const auto& g : module.globals()) {
    ctx.EraseAllocation(g.dptr);
    (void)ctx.impl->Free(g.dptr);
  }
  ctx.modules.Erase(request.module);
  return Code::kOk;
}

Outcome Session::Execute(const LaunchKernelRequest& request, Span params, ContextState& ctx,
                         Stream*, adapters::Module& module) {
  if (request.kernel >= module.kernels().size()) return Violation("LaunchKernel: no such kernel");
  const adapters::KernelInfo& kernel = module.kernels()[request.kernel];
  if (params.size() != kernel.param_bytes) {
    return Violation("LaunchKernel: parameter buffer of " + std::to_string(params.size()) +
                     " bytes for a kernel taking " + std::to_string(kernel.param_bytes));
  }
  if (request.cooperative > 1) {
    return Violation("LaunchKernel: cooperative is " + std::to_string(request.cooperative));
  }
  adapters::LaunchConfig config;
  config.grid = {request.grid[0], request.grid[1], request.grid[2]};
  config.block = {request.block[0], request.block[1], request.block[2]};
  config.shared_bytes = request.shared_bytes;
  config.cooperative = request.cooperative != 0;
  std::string printed;
  auto launch = [&] {
    return ctx.impl->Launch(module, request.kernel, config, params,
                            [&printed](std::string_view text) { printed += text; });
  };
  // A synchronous adapter runs the kernel right here; one that never ends must not outlive
  // its guest's interest in it. Asynchronous adapters return at once and need no watch.
  Status status;
  if (ctx.impl->asynchronous()) {
    // The adapter's gate decides when this session may submit (host/share_gate.h); the
    // launch leaves the gate's count when the adapter has completed it.
    ShareGate* gate = ctx.device < policy_.gates.size() ? policy_.gates[ctx.device] : nullptr;
    ShareFlow* flow = &Flow(ctx.device);
    if (gate != nullptr && !gate->Admit(*flow, stop_)) return Code::kLaunchFailed;
    status = launch();
    if (gate != nullptr) ctx.impl->NotifyWhenDone([gate, flow] { gate->Done(*flow); });
  } else {
    status = watcher_.Run(*ctx.impl, request.ctx, launch);
  }
  if (!printed.empty()) SendPrint(request.ctx, printed);
  if (!status.ok()) RecordFault(ctx, status.WithContext("kernel " + kernel.name), "launch");
  return status.code();
}

}  // namespace pvgpu::host
