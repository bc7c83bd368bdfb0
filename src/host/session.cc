#include "host/session.h"

#include <cstring>
#include <sstream>

#include "common/log.h"

namespace pvgpu::host {

using protocol::MessageHeader;

namespace {
// How often a waiting session re-checks its stop flag.
constexpr int kReceivePollMs = 250;
}  // namespace

Session::Session(uint32_t id, std::unique_ptr<transport::Endpoint> endpoint, SessionPolicy policy)
    : id_(id),
      endpoint_(std::move(endpoint)),
      policy_(std::move(policy)),
      faults_(id, [this](uint64_t count) { endpoint_->PublishErrorCount(count); }),
      fence_([this](uint64_t value) { endpoint_->PublishFence(value); }),
      watcher_(id, endpoint_.get()),
      budgets_(policy_.limits),
      contexts_(budgets_.contexts),
      regions_(budgets_.regions),
      uploads_(budgets_.uploads) {
  for (size_t i = 0; i < policy_.adapters.size(); ++i) {
    auto flow = std::make_unique<ShareFlow>();
    flow->weight = policy_.compute_share == 0 ? 1 : policy_.compute_share;
    flow->high_priority = policy_.high_priority;
    flows_.push_back(std::move(flow));
  }
}

void FlowUsage::Add(const FlowUsage& other) {
  kernels += other.kernels;
  busy_ns += other.busy_ns;
  queued_ns += other.queued_ns;
  worker_ns += other.worker_ns;
  bytes_htod += other.bytes_htod;
  bytes_dtoh += other.bytes_dtoh;
}

FlowUsage FlowUsage::Of(const ShareFlow& flow) {
  FlowUsage usage;
  usage.kernels = flow.kernels.load(std::memory_order_relaxed);
  usage.busy_ns = flow.busy_ns.load(std::memory_order_relaxed);
  usage.queued_ns = flow.queued_ns.load(std::memory_order_relaxed);
  usage.worker_ns = flow.worker_ns.load(std::memory_order_relaxed);
  usage.bytes_htod = flow.bytes_htod.load(std::memory_order_relaxed);
  usage.bytes_dtoh = flow.bytes_dtoh.load(std::memory_order_relaxed);
  return usage;
}

Session::~Session() {
  std::lock_guard<std::mutex> lock(mutex_);
  contexts_.Clear();
  regions_.Clear();  // after the contexts that may map them
}

void Session::Run() {
  PVGPU_INFO("session " << id_ << ": started on " << endpoint_->Describe());
  std::vector<uint8_t> message;
  uint64_t last_seq = 0;
  std::string end_reason = "guest disconnected";
  while (!stop_.load() && !said_goodbye_) {
    // What the watcher read ahead during a kernel comes first, in order. Bulk HtoD data goes
    // from the ring to the device where it lies; everything else is copied out first, so
    // that what is validated cannot change underneath.
    std::optional<Outcome> in_place;
    Status received;
    if (!watcher_.TakeReadAhead(&message)) {
      received = watcher_.channel_end();
      if (received.ok()) {
        received = endpoint_->ReceiveView(
            &message,
            [&](const transport::MessageView& view) {
              if (!RunInPlace(view, &last_seq, &in_place) && view.first.data() != message.data()) {
                message.resize(view.size());
                view.CopyPrefix(message.data(), view.size());
              }
            },
            kReceivePollMs);
      }
    }
    if (received.code() == Code::kNotReady) continue;
    if (!received.ok()) {
      if (received.code() != Code::kDeviceUnavailable) {
        EndWithViolation("channel error: " + received.message());
      } else {
        end_reason = received.message();
      }
      break;
    }
    const Outcome outcome = in_place ? std::move(*in_place) : RunMessage(message, &last_seq);
    if (outcome.violation()) {
      EndWithViolation(outcome.reason());
      break;
    }
    SettleCurrent();
  }
  if (said_goodbye_) end_reason = "guest said goodbye";
  if (stop_.load()) end_reason = "host shutting down";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    contexts_.Clear();
    regions_.Clear();
    uploads_.Clear();  // a guest that left mid-upload
  }
  watcher_.Stop();
  endpoint_->Close();
  if (violation_.empty()) PVGPU_INFO("session " << id_ << ": ended (" << end_reason << ")");
  finished_.store(true);
}

Outcome Session::RunMessage(std::span<const uint8_t> message, uint64_t* last_seq) {
  if (message.size() < sizeof(MessageHeader)) {
    return Violation("message shorter than its header (" + std::to_string(message.size()) +
                     " bytes)");
  }
  MessageHeader header;
  std::memcpy(&header, message.data(), sizeof(MessageHeader));
  const std::span<const uint8_t> body = message.subspan(sizeof(MessageHeader));
  if (Outcome begun = BeginMessage(header, last_seq); begun.violation()) return begun;
  if (log::Enabled(log::Level::kTrace)) {
    std::ostringstream os;
    os << "session " << id_ << " #" << current_.seq << " ";
    if (!protocol::TraceRequest(os, current_.op, body)) os << "op " << current_.op;
    log::Write(log::Level::kTrace, os.str());
  }
  Outcome result = Code::kOk;
  switch (protocol::Dispatch(*this, current_.op, body, &result)) {
    case protocol::DecodeError::kNone:
      return result;
    case protocol::DecodeError::kUnknownOp:
      return Violation("unknown op " + std::to_string(current_.op));
    case protocol::DecodeError::kBadSize:
      return Violation(std::string("bad size for ") +
                       protocol::OpName(static_cast<protocol::Op>(current_.op)) + " (" +
                       std::to_string(body.size()) + " bytes)");
    case protocol::DecodeError::kWrongDirection:
      return Violation("host-to-guest op sent by the guest");
  }
  return result;
}

Outcome Session::BeginMessage(const MessageHeader& header, uint64_t* last_seq) {
  current_ = header;
  touched_ctx_ = 0;
  settled_ = false;
  send_failure_ = Status::Ok();
  if (current_.seq != *last_seq + 1) {
    return Violation("out-of-order message: seq " + std::to_string(current_.seq) + " after " +
                     std::to_string(*last_seq));
  }
  *last_seq = current_.seq;
  if ((current_.flags & ~uint32_t{protocol::kFlagWantReply}) != 0) {
    return Violation("unknown message flags " + std::to_string(current_.flags));
  }
  if (!hello_done_ && current_.op != static_cast<uint32_t>(protocol::Op::kHello)) {
    return Violation("first message must be Hello");
  }
  return Code::kOk;
}

bool Session::RunInPlace(const transport::MessageView& message, uint64_t* last_seq,
                         std::optional<Outcome>* outcome) {
  using protocol::MemcpyHtoDRequest;
  if (message.size() < sizeof(MessageHeader) + sizeof(MemcpyHtoDRequest)) return false;
  MessageHeader header;
  message.CopyPrefix(&header, sizeof(header));
  // Traced messages take the usual path, which prints them.
  if (header.op != static_cast<uint32_t>(protocol::Op::kMemcpyHtoD) ||
      log::Enabled(log::Level::kTrace)) {
    return false;
  }
  if (Outcome begun = BeginMessage(header, last_seq); begun.violation()) {
    *outcome = std::move(begun);
    return true;
  }
  const transport::MessageView body = message.Tail(sizeof(header));
  MemcpyHtoDRequest request;
  body.CopyPrefix(&request, sizeof(request));
  *outcome = protocol::Invoke(*this, request, body.Tail(sizeof(request)));
  return true;
}

void Session::Stop() {
  stop_.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [handle, ctx] : contexts_) {
    if (ctx.impl) ctx.impl->Cancel();
  }
}

void Session::EndWithViolation(const std::string& reason) {
  PVGPU_WARN("session " << id_ << " (pid " << guest_pid_
                        << "): ended: protocol violation: " << reason);
  violation_ = reason;
}

void Session::SettleCurrent() {
  if (settled_) return;
  settled_ = true;
  adapters::Context* async = nullptr;
  if (ContextState* ctx = contexts_.Find(touched_ctx_);
      ctx != nullptr && ctx->impl && ctx->impl->asynchronous()) {
    async = ctx->impl.get();
  }
  if (async == nullptr) {
    fence_.Settle(current_.seq);
  } else {
    async->NotifyWhenDone(fence_.Defer(current_.seq));
  }
}

void Session::SynchronizeAdapter(ContextState& ctx) {
  if (!ctx.impl || !ctx.impl->asynchronous() || ctx.errors.sticky != Code::kOk) return;
  Status synced = ctx.impl->Synchronize();
  if (!synced.ok()) RecordFault(ctx, synced, "asynchronous work");
}

Code Session::SynchronizeContext(ContextState& ctx) {
  // Work runs in submission order, so everything before this message is done (once an
  // asynchronous adapter has been waited for; its faults surface here, as in CUDA).
  SynchronizeAdapter(ctx);
  return ctx.errors.TakeForSynchronize();
}

void Session::CountAsynchronousContexts() {
  size_t asynchronous = 0;
  for (const auto& [handle, ctx] : contexts_) {
    if (ctx.impl && ctx.impl->asynchronous()) ++asynchronous;
  }
  faults_.SetAsynchronousContexts(asynchronous);
}

uint64_t Session::UsedBytes() const {
  uint64_t used = 0;
  for (const auto& [handle, region] : regions_) used += region.size();
  for (const auto& [handle, ctx] : contexts_) {
    if (ctx.impl) used += ctx.impl->used_bytes();
  }
  return used;
}

SessionSnapshot Session::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SessionSnapshot s;
  s.id = id_;
  s.guest_pid = guest_pid_;
  s.guest_name = guest_name_;
  s.channel = endpoint_->Describe();
  s.used_bytes = UsedBytes();
  s.contexts = static_cast<uint32_t>(contexts_.size());
  s.staged_bytes = StagedBytes();
  for (const auto& [handle, ctx] : contexts_) s.devices.push_back(ctx.device);
  for (const auto& flow : flows_) s.usage.push_back(FlowUsage::Of(*flow));
  s.faults = fault_count_.load(std::memory_order_relaxed);
  s.replies = replies_.load(std::memory_order_relaxed);
  s.compute_share = policy_.compute_share;
  s.started_us = started_us_;
  s.high_priority = policy_.high_priority;
  return s;
}

MessageHeader Session::ReplyHeader() const {
  MessageHeader header;
  header.op = current_.op;
  header.flags = protocol::kFlagReply;
  header.seq = current_.seq;
  return header;
}

void Session::SendRaw(const MessageHeader& header, std::span<const uint8_t> fixed,
                      std::span<const uint8_t> payload) {
  std::span<const uint8_t> parts[] = {
      {reinterpret_cast<const uint8_t*>(&header), sizeof(header)}, fixed, payload};
  HandleSendStatus(endpoint_->Send(parts));
  if ((header.flags & protocol::kFlagReply) != 0) replies_.fetch_add(1, std::memory_order_relaxed);
}

void Session::HandleSendStatus(const Status& sent) {
  if (sent.code() == Code::kDeviceUnavailable) {
    PVGPU_DEBUG("session " << id_ << ": reply not delivered: " << sent.ToString());
    stop_.store(true);
  } else if (!sent.ok() && send_failure_.ok()) {
    // The guest corrupted its reply ring: a protocol violation like any other, with its reason.
    send_failure_ = sent;
  }
}

StatusOr<int> Session::TakeGuestDescriptor() {
  constexpr int kTimeoutMs = 5000;  // the descriptor is sent just before its request
  return endpoint_->ReceiveFd(kTimeoutMs);
}

void Session::SendPrint(uint64_t ctx, std::string_view text) {
  const size_t chunk_limit =
      endpoint_->max_message_size() - sizeof(MessageHeader) - sizeof(protocol::PrintRequest);
  while (!text.empty()) {
    const std::string_view chunk = text.substr(0, chunk_limit);
    text.remove_prefix(chunk.size());
    MessageHeader header;
    header.op = static_cast<uint32_t>(protocol::Op::kPrint);
    protocol::PrintRequest print;
    print.ctx = ctx;
    SendRaw(header, {reinterpret_cast<const uint8_t*>(&print), sizeof(print)},
            {reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size()});
  }
}

}  // namespace pvgpu::host
