// The session's side of the generated dispatch (protocol::Invoke): handles resolve to objects
// in the session's typed stores, and the two ways a handle can fail the request. Every request
// reaches its handler only through here, so no handler looks a handle up itself.
#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using protocol::HandleKind;
using protocol::HandleTag;

ContextState* Session::Find(HandleTag<HandleKind::kContext>, uint64_t id) {
  ContextState* ctx = contexts_.Find(id);
  // The completion fence covers the message through the context it named (SettleCurrent).
  if (ctx != nullptr) touched_ctx_ = id;
  return ctx;
}

Region* Session::Find(HandleTag<HandleKind::kRegion>, uint64_t id) { return regions_.Find(id); }

Upload* Session::Find(HandleTag<HandleKind::kUpload>, uint64_t id) { return uploads_.Find(id); }

adapters::Module* Session::Find(HandleTag<HandleKind::kModule>, uint64_t id, ContextState& ctx) {
  std::unique_ptr<adapters::Module>* module = ctx.modules.Find(id);
  return module != nullptr ? module->get() : nullptr;
}

bool Session::Fresh(HandleTag<HandleKind::kContext>, uint64_t id) const {
  return contexts_.Fresh(id);
}

bool Session::Fresh(HandleTag<HandleKind::kRegion>, uint64_t id) const {
  return regions_.Fresh(id);
}

bool Session::Fresh(HandleTag<HandleKind::kUpload>, uint64_t id) const {
  return uploads_.Fresh(id);
}

Outcome Session::UnknownHandle(protocol::Op op, HandleKind kind, uint64_t id, ContextState* ctx) {
  // A graph's entry whose module or event the guest has since destroyed (GraphExecCreate
  // checked them all): the graph fails like asynchronous work, the session goes on.
  if (replaying_ && ctx != nullptr) {
    const Status status =
        Error(Code::kInvalidHandle, std::string("graph node: ") + protocol::OpName(op) +
                                        " names a " + protocol::HandleKindName(kind) +
                                        " destroyed since the graph was instantiated");
    RecordFault(*ctx, status, "graph");
    return Outcome(status.code());
  }
  // Streams and events are created by asynchronous messages, so a creation the session's
  // limit refused is reported at the guest's next synchronization, and the guest may name the
  // handle before it learns: that is the refusal's error again, not a broken protocol.
  auto refused = [&](auto& store) -> std::optional<Outcome> {
    if (!store.Refused(id)) return std::nullopt;
    const bool destroys = op == protocol::Op::kStreamDestroy || op == protocol::Op::kEventDestroy;
    if (destroys) {
      store.Forget(id);  // the guest gives up what it never got
      return Outcome(Code::kOk);
    }
    const Status status =
        Error(Code::kOutOfMemory, std::string(protocol::HandleKindName(kind)) + " " +
                                      std::to_string(id) + " was refused: the session's limit");
    if (current_async_) RecordFault(*ctx, status, protocol::OpName(op));
    return Outcome(status.code());
  };
  if (ctx != nullptr && kind == HandleKind::kStream) {
    if (auto outcome = refused(ctx->streams)) return *outcome;
  }
  if (ctx != nullptr && kind == HandleKind::kEvent) {
    if (auto outcome = refused(ctx->events)) return *outcome;
  }
  return Violation(std::string(protocol::OpName(op)) + ": unknown " +
                   protocol::HandleKindName(kind) + " handle " + std::to_string(id));
}

Outcome Session::TakenHandle(protocol::Op op, HandleKind kind, uint64_t id) {
  const std::string what =
      std::string(protocol::OpName(op)) + ": new " + protocol::HandleKindName(kind) + " handle ";
  return Violation(id == 0 ? what + "is 0" : what + std::to_string(id) + " is in use");
}

}  // namespace pvgpu::host
