#include "host/session.h"

#include <chrono>
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
      watcher_(id, endpoint_.get()) {}

Session::~Session() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [handle, ctx] : contexts_) DestroyContext(*ctx);
  contexts_.clear();
  regions_.clear();  // after the contexts that may map them
}

void Session::Run() {
  PVGPU_INFO("session " << id_ << ": started on " << endpoint_->Describe());
  std::vector<uint8_t> message;
  uint64_t last_seq = 0;
  bool in_place = false;  // the message just received was run where it arrived
  std::string end_reason = "guest disconnected";
  while (!stop_.load() && !fatal_ && !said_goodbye_) {
    // What the watcher read ahead during a kernel comes first, in order.
    Status received;
    if (watcher_.TakeReadAhead(&message)) {
    } else if (!watcher_.channel_end().ok()) {
      received = watcher_.channel_end();
    } else {
      // Bulk HtoD data goes from the ring to the device where it lies; everything else is
      // copied out first, so that what is validated cannot change underneath.
      received = endpoint_->ReceiveView(
          &message,
          [&](const transport::MessageView& view) {
            in_place = RunInPlace(view, &last_seq);
            if (!in_place && view.first.data() != message.data()) {
              message.resize(view.size());
              view.CopyPrefix(message.data(), view.size());
            }
          },
          kReceivePollMs);
    }
    if (received.code() == Code::kNotReady) continue;
    if (!received.ok()) {
      if (received.code() != Code::kDeviceUnavailable) {
        Fatal("channel error: " + received.message());
      } else {
        end_reason = received.message();
      }
      break;
    }
    if (in_place) {
      in_place = false;
      if (fatal_) break;
      SettleCurrent();
      continue;
    }
    if (message.size() < sizeof(MessageHeader)) {
      Fatal("message shorter than its header (" + std::to_string(message.size()) + " bytes)");
      break;
    }
    MessageHeader header;
    std::memcpy(&header, message.data(), sizeof(MessageHeader));
    std::span<const uint8_t> body(message.data() + sizeof(MessageHeader),
                                  message.size() - sizeof(MessageHeader));
    if (!BeginMessage(header, &last_seq)) break;
    if (log::Enabled(log::Level::kTrace)) {
      std::ostringstream os;
      os << "session " << id_ << " #" << current_.seq << " ";
      if (!protocol::TraceRequest(os, current_.op, body)) os << "op " << current_.op;
      log::Write(log::Level::kTrace, os.str());
    }
    Code result = Code::kOk;
    touched_ctx_ = 0;
    settled_ = false;
    switch (protocol::Dispatch(*this, current_.op, body, &result)) {
      case protocol::DecodeError::kNone:
        break;
      case protocol::DecodeError::kUnknownOp:
        Fatal("unknown op " + std::to_string(current_.op));
        break;
      case protocol::DecodeError::kBadSize:
        Fatal(std::string("bad size for ") +
              protocol::OpName(static_cast<protocol::Op>(current_.op)) + " (" +
              std::to_string(body.size()) + " bytes)");
        break;
      case protocol::DecodeError::kWrongDirection:
        Fatal("host-to-guest op sent by the guest");
        break;
    }
    if (fatal_) break;
    SettleCurrent();
  }
  if (said_goodbye_) end_reason = "guest said goodbye";
  if (stop_.load()) end_reason = "host shutting down";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [handle, ctx] : contexts_) DestroyContext(*ctx);
    contexts_.clear();
    regions_.clear();
  }
  watcher_.Stop();
  endpoint_->Close();
  if (!fatal_) PVGPU_INFO("session " << id_ << ": ended (" << end_reason << ")");
  finished_.store(true);
}

bool Session::BeginMessage(const MessageHeader& header, uint64_t* last_seq) {
  current_ = header;
  if (current_.seq != *last_seq + 1) {
    Fatal("out-of-order message: seq " + std::to_string(current_.seq) + " after " +
          std::to_string(*last_seq));
    return false;
  }
  *last_seq = current_.seq;
  if ((current_.flags & ~uint32_t{protocol::kFlagWantReply}) != 0) {
    Fatal("unknown message flags " + std::to_string(current_.flags));
    return false;
  }
  if (!hello_done_ && current_.op != static_cast<uint32_t>(protocol::Op::kHello)) {
    Fatal("first message must be Hello");
    return false;
  }
  return true;
}

bool Session::RunInPlace(const transport::MessageView& message, uint64_t* last_seq) {
  using protocol::MemcpyHtoDRequest;
  if (message.size() < sizeof(MessageHeader) + sizeof(MemcpyHtoDRequest)) return false;
  MessageHeader header;
  message.CopyPrefix(&header, sizeof(header));
  // Traced messages take the usual path, which prints them.
  if (header.op != static_cast<uint32_t>(protocol::Op::kMemcpyHtoD) ||
      log::Enabled(log::Level::kTrace)) {
    return false;
  }
  if (!BeginMessage(header, last_seq)) return true;  // the session ends (fatal_)
  const transport::MessageView body = message.Tail(sizeof(header));
  MemcpyHtoDRequest request;
  body.CopyPrefix(&request, sizeof(request));
  touched_ctx_ = 0;
  settled_ = false;
  (void)Handle(request, body.Tail(sizeof(request)));
  return true;
}

void Session::Stop() {
  stop_.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [handle, ctx] : contexts_) {
    if (ctx->impl) ctx->impl->Cancel();
  }
}

Code Session::Fatal(const std::string& reason) {
  if (!fatal_) {
    PVGPU_WARN("session " << id_ << " (pid " << guest_pid_
                          << "): ended: protocol violation: " << reason);
  }
  fatal_ = true;
  return Code::kInvalidValue;
}

Session::ContextState* Session::FindContext(uint64_t handle) {
  auto it = contexts_.find(handle);
  if (it == contexts_.end()) {
    Fatal("unknown context handle " + std::to_string(handle));
    return nullptr;
  }
  touched_ctx_ = handle;
  return it->second.get();
}

void Session::SettleCurrent() {
  if (settled_) return;
  settled_ = true;
  adapters::Context* async = nullptr;
  if (auto it = contexts_.find(touched_ctx_);
      it != contexts_.end() && it->second->impl && it->second->impl->asynchronous()) {
    async = it->second->impl.get();
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

bool Session::InAllocation(const ContextState& ctx, uint64_t address, uint64_t size) const {
  return ctx.allocations.Contains(address, size);
}

bool Session::ValidStream(ContextState& ctx, uint64_t stream) {
  if (stream == 0 || ctx.streams.count(stream) != 0) return true;
  Fatal("unknown stream handle " + std::to_string(stream));
  return false;
}

void Session::CountAsynchronousContexts() {
  size_t asynchronous = 0;
  for (const auto& [handle, ctx] : contexts_) {
    if (ctx->impl && ctx->impl->asynchronous()) ++asynchronous;
  }
  faults_.SetAsynchronousContexts(asynchronous);
}

void Session::DestroyContext(ContextState& ctx) {
  if (!ctx.impl) return;
  ctx.impl->Cancel();
  ctx.modules.clear();
  ctx.impl.reset();  // frees every allocation of the context
  ctx.allocations.clear();
}

uint64_t Session::UsedBytes() const {
  uint64_t used = 0;
  for (const auto& [handle, region] : regions_) used += region->size;
  for (const auto& [handle, ctx] : contexts_) {
    if (ctx->impl) used += ctx->impl->used_bytes();
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
  for (const auto& [handle, ctx] : contexts_) s.devices.push_back(ctx->device);
  return s;
}

void Session::SendRaw(const MessageHeader& header, std::span<const uint8_t> fixed,
                      std::span<const uint8_t> payload) {
  std::span<const uint8_t> parts[] = {
      {reinterpret_cast<const uint8_t*>(&header), sizeof(header)}, fixed, payload};
  HandleSendStatus(endpoint_->Send(parts));
}

void Session::HandleSendStatus(const Status& sent) {
  if (sent.code() == Code::kDeviceUnavailable) {
    PVGPU_DEBUG("session " << id_ << ": reply not delivered: " << sent.ToString());
    stop_.store(true);
  } else if (!sent.ok()) {
    // The guest corrupted its reply ring: a protocol violation like any other, with its reason.
    Fatal("channel error: " + sent.message());
  }
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
