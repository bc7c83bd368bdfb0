#include "guest/cuda/module_upload.h"

#include <algorithm>

#include "common/log.h"

namespace pvgpu::guest {

Code SendModuleImage(Client& client, const protocol::ModuleLoadRequest& request,
                     std::span<const uint8_t> image, std::vector<uint8_t>* description) {
  if (image.size() <= client.max_payload()) {
    return client.Call(request, image, nullptr, description);
  }
  protocol::ModuleUploadBeginRequest begin;
  begin.upload = Client::NewHandle();
  begin.size = image.size();
  protocol::ModuleUploadBeginReply limit{};
  if (Code code = client.Call(begin, {}, &limit); code != Code::kOk) {
    if (code == Code::kOutOfMemory && image.size() > limit.limit) {
      PVGPU_WARN("module image of " << image.size() << " bytes exceeds the host's limit of "
                                    << limit.limit << " bytes per session (pvgpud --limits "
                                    << "upload_bytes)");
    } else if (code == Code::kOutOfMemory) {
      PVGPU_WARN("the host refused to stage a module image of "
                 << image.size() << " bytes: the session has too many unfinished uploads");
    }
    return code;
  }
  // The chunks are asynchronous: they stream back to back, and the load that follows is the
  // one round trip (it fails, ending the session, if a chunk was refused).
  for (size_t offset = 0; offset < image.size();) {
    const size_t size = std::min(image.size() - offset, client.max_payload());
    protocol::ModuleUploadChunkRequest chunk;
    chunk.upload = begin.upload;
    chunk.offset = offset;
    if (Code code = client.Post(chunk, image.subspan(offset, size)); code != Code::kOk) {
      return code;
    }
    offset += size;
  }
  protocol::ModuleLoadUploadedRequest load;
  load.ctx = request.ctx;
  load.module = request.module;
  load.upload = begin.upload;
  load.image_kind = request.image_kind;
  load.log_limit = request.log_limit;
  return client.Call(load, {}, nullptr, description);
}

}  // namespace pvgpu::guest
