// Session handlers: graphs (docs/graphs.md). The guest linearizes an instantiated graph and
// sends its device nodes as the messages they would be on their own (LaunchKernel,
// MemcpyDtoD, Memset, EventRecord), once, in GraphExecCreate; GraphExecLaunch then runs them in
// that order through the same dispatch and handlers, so a graph of a hundred kernels costs the
// channel one message. Everything a message's own dispatch would refuse as a violation (sizes,
// ops, handles, kernel indices, parameter buffers) is refused at GraphExecCreate; ranges are
// checked when the graph runs, as for the messages themselves, and their errors are the
// context's asynchronous errors.
#include <cstring>
#include <optional>
#include <string>

#include "common/log.h"
#include "host/session.h"
#include "protocol/protocol_autogen.h"

namespace pvgpu::host {

using namespace protocol;

namespace {

// The header of each entry in a GraphExecCreate payload; the entry's bytes follow, padded to 8.
struct EntryHeader {
  uint32_t op;
  uint32_t size;
};
static_assert(sizeof(EntryHeader) == 8);

// The entry's fixed request, when `body` holds one of the right size (exactly, or at least for
// a request with a payload).
template <typename Request>
bool Read(std::span<const uint8_t> body, Request* request) {
  if (Request::kHasPayload ? body.size() < sizeof(Request) : body.size() != sizeof(Request)) {
    return false;
  }
  std::memcpy(request, body.data(), sizeof(Request));
  return true;
}

}  // namespace

Outcome Session::CheckGraphEntry(ContextState& ctx, uint32_t op, Span body) {
  auto bad = [&](const std::string& why) {
    return Violation("GraphExecCreate: " + std::string(OpName(static_cast<Op>(op))) +
                     " entry: " + why);
  };
  // Each entry names the instantiating context and no stream (it runs on the launch's).
  auto common = [&](const auto& request) -> std::optional<Outcome> {
    const uint64_t ctx_handle = contexts_.Find(request.ctx) == &ctx ? request.ctx : 0;
    if (ctx_handle == 0) return bad("names another context");
    if (request.stream != 0) return bad("names a stream");
    return std::nullopt;
  };
  switch (static_cast<Op>(op)) {
    case Op::kLaunchKernel: {
      LaunchKernelRequest request;
      if (!Read(body, &request)) return bad("bad size");
      if (auto refused = common(request)) return *refused;
      std::unique_ptr<adapters::Module>* module = ctx.modules.Find(request.module);
      if (module == nullptr) return bad("unknown module handle " + std::to_string(request.module));
      if (request.kernel >= (*module)->kernels().size()) return bad("no such kernel");
      const size_t params = body.size() - sizeof(request);
      if (params != (*module)->kernels()[request.kernel].param_bytes) {
        return bad("parameter buffer of " + std::to_string(params) + " bytes");
      }
      if (request.cooperative > 1)
        return bad("cooperative is " + std::to_string(request.cooperative));
      return Code::kOk;
    }
    case Op::kMemcpyDtoD: {
      MemcpyDtoDRequest request;
      if (!Read(body, &request)) return bad("bad size");
      if (auto refused = common(request)) return *refused;
      return Code::kOk;
    }
    case Op::kMemset: {
      MemsetRequest request;
      if (!Read(body, &request)) return bad("bad size");
      if (auto refused = common(request)) return *refused;
      return Code::kOk;
    }
    case Op::kMemcpyHtoD: {  // a batch memory operation's write: the value is the payload
      MemcpyHtoDRequest request;
      if (!Read(body, &request)) return bad("bad size");
      if (auto refused = common(request)) return *refused;
      return Code::kOk;
    }
    case Op::kStreamWaitValue: {  // a batch memory operation's wait
      StreamWaitValueRequest request;
      if (!Read(body, &request)) return bad("bad size");
      if (auto refused = common(request)) return *refused;
      return Code::kOk;
    }
    case Op::kEventRecord: {
      EventRecordRequest request;
      if (!Read(body, &request)) return bad("bad size");
      if (auto refused = common(request)) return *refused;
      if (ctx.events.Find(request.event) == nullptr) {
        return bad("unknown event handle " + std::to_string(request.event));
      }
      return Code::kOk;
    }
    default:
      return Violation("GraphExecCreate: op " + std::to_string(op) + " cannot be a graph node");
  }
}

Outcome Session::Execute(const GraphExecCreateRequest& request, Span payload, ContextState& ctx) {
  std::vector<GraphExec::Entry> entries;
  size_t offset = 0;
  while (offset < payload.size()) {
    if (payload.size() - offset < sizeof(EntryHeader)) {
      return Violation("GraphExecCreate: an entry header past the payload's end");
    }
    EntryHeader header;
    std::memcpy(&header, payload.data() + offset, sizeof(header));
    offset += sizeof(header);
    if (header.size > payload.size() - offset) {
      return Violation("GraphExecCreate: an entry of " + std::to_string(header.size) +
                       " bytes past the payload's end");
    }
    if (entries.size() >= request.count) {
      return Violation("GraphExecCreate: more entries than its count of " +
                       std::to_string(request.count));
    }
    if (Outcome checked = CheckGraphEntry(ctx, header.op, payload.subspan(offset, header.size));
        checked.violation()) {
      return checked;
    }
    entries.push_back({header.op, offset, header.size});
    const size_t padded = (size_t{header.size} + 7) & ~size_t{7};
    offset += std::min(padded, payload.size() - offset);
  }
  if (entries.size() != request.count) {
    return Violation("GraphExecCreate: " + std::to_string(entries.size()) +
                     " entries for a count of " + std::to_string(request.count));
  }
  // Room for the nodes, then for the piece itself; both are given back if either is refused.
  ObjectBudget& nodes = budgets_.graph_nodes;
  if (nodes.limit() - nodes.used() < entries.size()) {
    PVGPU_WARN("session " << id_ << ": a graph of " << entries.size() << " nodes refused: "
                          << nodes.used() << " of the session's " << nodes.limit()
                          << " graph nodes are held (pvgpud --limits graph_nodes=N)");
    return Code::kOutOfMemory;
  }
  for (size_t i = 0; i < entries.size(); ++i) (void)nodes.Take();
  const size_t count = entries.size();
  GraphExec* exec =
      ctx.graph_execs.Add(request.exec, nodes, std::vector<uint8_t>(payload.begin(), payload.end()),
                          std::move(entries));
  if (exec == nullptr) {
    nodes.Give(count);
    PVGPU_WARN("session " << id_ << ": a graph refused: the session's limit of "
                          << budgets_.graph_execs.limit() << " graph pieces (graph_execs)");
    return Code::kOutOfMemory;
  }
  return Code::kOk;
}

Outcome Session::Execute(const GraphExecLaunchRequest& launch, Span, ContextState& ctx, Stream*,
                         GraphExec& exec) {
  // The entries run as their own messages would, under this message's sequence number (the
  // fence covers them with it), without replies of their own; the first error is the launch's
  // result when the guest waits for one (PVGPU_PIPELINE=0); the handlers record it as the
  // context's asynchronous error either way.
  replaying_ = true;
  Outcome first = Code::kOk;
  for (const GraphExec::Entry& entry : exec.entries) {
    Outcome result = Code::kOk;
    const Span body(exec.bytes.data() + entry.offset, entry.size);
    if (Dispatch(*this, entry.op, body, &result) != DecodeError::kNone) {
      result = Violation("GraphExecLaunch: an entry no longer decodes");  // checked at creation
    }
    if (result.violation()) {
      replaying_ = false;
      return result;
    }
    if (first.code() == Code::kOk) first = result.code();
  }
  replaying_ = false;
  Begin<GraphExecLaunchRequest>();
  return first;
}

Outcome Session::Execute(const GraphExecDestroyRequest& request, Span, ContextState& ctx,
                         GraphExec&) {
  ctx.graph_execs.Erase(request.exec);
  return Code::kOk;
}

}  // namespace pvgpu::host
