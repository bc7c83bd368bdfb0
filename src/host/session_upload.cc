// Session handlers: module images too large for one channel message. The guest stages the
// image in order (ModuleUploadBegin, ModuleUploadChunk...), then loads it with
// ModuleLoadUploaded, which consumes the upload. Every transport carries it the same way; the
// chunks are ordinary messages below the channel's limit.
//
// What bounds a hostile guest: the session's uploads and upload_bytes limits (refused at the
// start with CUDA_ERROR_OUT_OF_MEMORY, before any byte is staged), chunks that must arrive in
// order and stay inside the announced size (a violation otherwise), and the session's end,
// which frees every unfinished upload.
#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

// LoadModule replies with a ModuleLoadReply to either message.
static_assert(sizeof(ModuleLoadReply) == sizeof(ModuleLoadUploadedReply));

std::string Session::ImageTooLarge(uint64_t size) const {
  return "module image of " + std::to_string(size) + " bytes exceeds the session's limit of " +
         std::to_string(policy_.limits.upload_bytes) + " bytes (pvgpud --limits upload_bytes=N)";
}

uint64_t Session::StagedBytes() const {
  uint64_t staged = 0;
  for (const auto& [id, upload] : uploads_) staged += upload.size;
  return staged;
}

Outcome Session::Execute(const ModuleUploadBeginRequest& request, Span) {
  ModuleUploadBeginReply reply;
  reply.limit = policy_.limits.upload_bytes;
  const uint64_t staged = StagedBytes();  // never above the limit, so the difference is safe
  Code code = Code::kOk;
  if (request.size == 0) {
    code = Code::kInvalidValue;
  } else if (request.size > policy_.limits.upload_bytes) {
    PVGPU_INFO("session " << id_ << ": refused an upload: " << ImageTooLarge(request.size));
    code = Code::kOutOfMemory;
  } else if (request.size > policy_.limits.upload_bytes - staged || budgets_.uploads.full()) {
    PVGPU_INFO("session " << id_ << ": refused an upload of " << request.size
                          << " bytes: " << uploads_.size() << " uploads of " << staged
                          << " bytes are unfinished (limits: uploads=" << policy_.limits.uploads
                          << ", upload_bytes=" << policy_.limits.upload_bytes << ")");
    code = Code::kOutOfMemory;
  } else {
    std::lock_guard<std::mutex> lock(mutex_);
    (void)uploads_.Add(request.upload, request.size);
  }
  reply.result = static_cast<int32_t>(code);
  SendReply(reply);
  return code;
}

Outcome Session::Execute(const ModuleUploadChunkRequest& request, Span data, Upload& upload) {
  if (request.offset != upload.bytes.size()) {
    return Violation("ModuleUploadChunk: offset " + std::to_string(request.offset) + " after " +
                     std::to_string(upload.bytes.size()) + " bytes");
  }
  if (data.size() > upload.size - upload.bytes.size()) {
    return Violation("ModuleUploadChunk: " + std::to_string(data.size()) +
                     " bytes past the upload's size of " + std::to_string(upload.size));
  }
  upload.bytes.insert(upload.bytes.end(), data.begin(), data.end());
  return Code::kOk;
}

Outcome Session::Execute(const ModuleLoadUploadedRequest& request, Span, ContextState& ctx,
                         Upload& upload) {
  if (upload.bytes.size() != upload.size) {
    return Violation("ModuleLoadUploaded: " + std::to_string(upload.bytes.size()) + " of " +
                     std::to_string(upload.size) + " bytes uploaded");
  }
  // Taken out of the store first: whatever the load does, the upload is over.
  std::vector<uint8_t> image = std::move(upload.bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    uploads_.Erase(request.upload);
  }
  // Not refused_on_fault in messages.json, so that a faulted context still consumes the
  // upload; the fault is its answer, as for ModuleLoad.
  if (const Code fault = ctx.errors.sticky; fault != Code::kOk) return fault;
  return LoadModule(ctx, request.module, request.image_kind, request.log_limit, image);
}

}  // namespace pvgpu::host
