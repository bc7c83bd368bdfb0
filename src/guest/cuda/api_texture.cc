// Driver API: texture and surface objects (docs/textures.md). A CUtexObject or CUsurfObject is
// the 64-bit handle of an object the host holds in its context; kernels receive it as a
// parameter and the adapter resolves it when a texture or surface instruction names it. The
// guest keeps the descriptors it was given, for the Get* calls.
#include <cstring>
#include <unordered_map>

#include "common/mutex.h"
#include "guest/cuda/arrays.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

struct TextureRecord {
  CUctx_st* ctx = nullptr;
  uint64_t ctx_handle = 0;
  uint64_t handle = 0;  // the host's
  uint64_t value = 0;   // the CUtexObject / CUsurfObject: what kernels name it by
  bool surface = false;
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC sampler{};
  // What the resource names stays alive while the object does.
  Ref<ArrayRecord> array;
};

class TextureStore {
 public:
  // False when the value names a live object already (adapters whose values are their
  // driver's, in different contexts).
  bool Add(Ref<TextureRecord> record) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return records_.emplace(record->value, std::move(record)).second;
  }
  Ref<TextureRecord> Find(uint64_t handle, bool surface) const EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = records_.find(handle);
    if (it == records_.end() || it->second->surface != surface) return nullptr;
    return it->second;
  }
  Ref<TextureRecord> Take(uint64_t handle, bool surface) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = records_.find(handle);
    if (it == records_.end() || it->second->surface != surface) return nullptr;
    Ref<TextureRecord> record = std::move(it->second);
    records_.erase(it);
    return record;
  }

 private:
  mutable Mutex mutex_;
  std::unordered_map<uint64_t, Ref<TextureRecord>> records_ GUARDED_BY(mutex_);
};

TextureStore& Textures() {
  static auto* store = new TextureStore();
  return *store;
}

Code PostDestroy(const TextureRecord& record) {
  if (!LiveContext(record.ctx) || record.ctx->handle.load() != record.ctx_handle) {
    return Code::kOk;  // gone with its context
  }
  protocol::TexObjectDestroyRequest request;
  request.ctx = record.ctx_handle;
  request.texture = record.handle;
  return record.ctx->client->Post(request);
}

// Fills the request's resource fields from a resource descriptor.
Code Resource(CUctx_st* ctx, const CUDA_RESOURCE_DESC& r, protocol::TexObjectCreateRequest* q,
              TextureRecord* record) {
  if (r.flags != 0) return Code::kInvalidValue;
  q->resource_type = static_cast<uint32_t>(r.resType);
  switch (r.resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      Ref<CUarray_st> array;
      if (Code code = FindArray(r.res.array.hArray, &array); code != Code::kOk) return code;
      if (array->array->ctx != ctx) return Code::kInvalidContext;
      q->array = array->array->handle;
      q->array_level = array->level;
      record->array = array->array;
      return Code::kOk;
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      Ref<CUmipmappedArray_st> mipmapped = MipmappedStore().Find(r.res.mipmap.hMipmappedArray);
      if (mipmapped == nullptr) return Code::kInvalidHandle;
      if (Code code = LiveArray(*mipmapped->array); code != Code::kOk) return code;
      if (mipmapped->array->ctx != ctx) return Code::kInvalidContext;
      q->array = mipmapped->array->handle;
      record->array = mipmapped->array;
      return Code::kOk;
    }
    case CU_RESOURCE_TYPE_LINEAR: {
      const texture::FormatInfo info = texture::Describe(r.res.linear.format);
      if (info.bytes == 0) return Code::kNotSupported;
      const size_t element = size_t{info.bytes} * r.res.linear.numChannels;
      if (element == 0) return Code::kInvalidValue;
      q->dptr = r.res.linear.devPtr;
      q->format = r.res.linear.format;
      q->channels = r.res.linear.numChannels;
      q->width = r.res.linear.sizeInBytes / element;
      return Code::kOk;
    }
    case CU_RESOURCE_TYPE_PITCH2D:
      q->dptr = r.res.pitch2D.devPtr;
      q->format = r.res.pitch2D.format;
      q->channels = r.res.pitch2D.numChannels;
      q->width = r.res.pitch2D.width;
      q->height = r.res.pitch2D.height;
      q->pitch = r.res.pitch2D.pitchInBytes;
      return Code::kOk;
  }
  return Code::kInvalidValue;
}

}  // namespace

Code CreateTextureObject(CUctx_st* ctx, bool surface, const CUDA_RESOURCE_DESC* resource,
                         const CUDA_TEXTURE_DESC* sampler, unsigned long long* out) {
  auto record = std::make_shared<TextureRecord>();
  record->surface = surface;
  record->resource = *resource;
  if (sampler != nullptr) record->sampler = *sampler;
  protocol::TexObjectCreateRequest request{};
  if (Code code = Resource(ctx, *resource, &request, record.get()); code != Code::kOk) {
    return code;
  }
  record->ctx = ctx;
  record->ctx_handle = ctx->handle.load();
  record->handle = Client::NewHandle();
  request.ctx = record->ctx_handle;
  request.texture = record->handle;
  request.surface = surface ? 1 : 0;
  if (sampler != nullptr) {
    for (int i = 0; i < 3; ++i) request.address[i] = sampler->addressMode[i];
    request.filter = sampler->filterMode;
    request.mip_filter = sampler->mipmapFilterMode;
    request.flags = sampler->flags;
    request.max_anisotropy = sampler->maxAnisotropy;
    for (int i = 0; i < 4; ++i) request.border[i] = sampler->borderColor[i];
    request.mip_bias = sampler->mipmapLevelBias;
    request.min_lod = sampler->minMipmapLevelClamp;
    request.max_lod = sampler->maxMipmapLevelClamp;
  }
  protocol::TexObjectCreateReply reply;
  if (Code code = ctx->client->Call(request, {}, &reply); code != Code::kOk) return code;
  record->value = reply.value;
  Ref<TextureRecord> kept = record;
  if (!Textures().Add(std::move(record))) {
    PVGPU_WARN("texture object value " << reply.value << " is another live object's");
    (void)PostDestroy(*kept);
    return Code::kUnknown;
  }
  *out = reply.value;
  return Code::kOk;
}

Code DestroyTextureObject(uint64_t value, bool surface) {
  Ref<TextureRecord> record = Textures().Take(value, surface);
  if (record == nullptr) return Code::kInvalidHandle;
  return PostDestroy(*record);
}

namespace api {

Code TexObjectCreate(CUctx_st* ctx, CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                     const CUDA_TEXTURE_DESC* pTexDesc,
                     const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  if (pResViewDesc != nullptr) {
    PVGPU_WARN("cuTexObjectCreate: resource views are not supported");
    return Code::kNotSupported;
  }
  return CreateTextureObject(ctx, false, pResDesc, pTexDesc, pTexObject);
}

Code TexObjectDestroy(CUtexObject texObject) { return DestroyTextureObject(texObject, false); }

Code TexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  Ref<TextureRecord> record = Textures().Find(texObject, false);
  if (record == nullptr) return Code::kInvalidHandle;
  *pResDesc = record->resource;
  return Code::kOk;
}

Code TexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject) {
  Ref<TextureRecord> record = Textures().Find(texObject, false);
  if (record == nullptr) return Code::kInvalidHandle;
  *pTexDesc = record->sampler;
  return Code::kOk;
}

// No object has a view (cuTexObjectCreate refuses them), which the driver answers so.
Code TexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* pResViewDesc, CUtexObject texObject) {
  (void)pResViewDesc;
  if (Textures().Find(texObject, false) == nullptr) return Code::kInvalidHandle;
  return Code::kInvalidValue;
}

Code SurfObjectCreate(CUctx_st* ctx, CUsurfObject* pSurfObject,
                      const CUDA_RESOURCE_DESC* pResDesc) {
  if (pResDesc->resType != CU_RESOURCE_TYPE_ARRAY) return Code::kInvalidValue;
  return CreateTextureObject(ctx, true, pResDesc, nullptr, pSurfObject);
}

Code SurfObjectDestroy(CUsurfObject surfObject) { return DestroyTextureObject(surfObject, true); }

Code SurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUsurfObject surfObject) {
  Ref<TextureRecord> record = Textures().Find(surfObject, true);
  if (record == nullptr) return Code::kInvalidHandle;
  *pResDesc = record->resource;
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
