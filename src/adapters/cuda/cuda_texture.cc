// Texture objects on the cuda adapter (docs/textures.md). pvgpu's arrays are linear blocks of
// device memory (common/texture.h), so what the host driver can be given is what linear memory
// makes: a one-level 1D or 2D texture, as a pitch-2D resource over its memory (a linear one for
// CU_RESOURCE_TYPE_LINEAR). 3D, layered, cubemap and mipmapped textures and surfaces need the
// driver's own CUarrays, which this adapter does not make: NOT_SUPPORTED. The driver's object is
// the value the session returns, so kernels pass it to the GPU unchanged; each session's
// objects live in its own CUDA context.
#include <cstring>

#include "adapters/cuda/completion_queue.h"
#include "adapters/cuda/cuda_adapter.h"
#include "adapters/cuda/cuda_context.h"

namespace pvgpu::adapters::cuda {

StatusOr<uint64_t> CudaContext::CreateTexture(uint64_t handle, const texture::TextureSpec& spec) {
  const DriverApi& api = driver().api();
  if (api.cuTexObjectCreate == nullptr || api.cuTexObjectDestroy == nullptr) {
    return Error(Code::kNotSupported, "the host driver has no texture objects");
  }
  const bool flat = spec.geometry == texture::Geometry::k1D ||
                    spec.geometry == texture::Geometry::k2D;
  if (spec.surface || !flat || spec.levels.size() != 1) {
    return Error(Code::kNotSupported,
                 "the cuda adapter makes 1D and 2D one-level texture objects only");
  }
  const texture::Level& level = spec.levels[0];
  CUDA_RESOURCE_DESC resource;
  std::memset(&resource, 0, sizeof(resource));
  if (spec.linear) {
    resource.resType = CU_RESOURCE_TYPE_LINEAR;
    resource.res.linear.devPtr = spec.base + level.offset;
    resource.res.linear.format = static_cast<CUarray_format>(spec.format);
    resource.res.linear.numChannels = spec.channels;
    resource.res.linear.sizeInBytes = level.width * spec.element_bytes;
  } else {
    resource.resType = CU_RESOURCE_TYPE_PITCH2D;
    resource.res.pitch2D.devPtr = spec.base + level.offset;
    resource.res.pitch2D.format = static_cast<CUarray_format>(spec.format);
    resource.res.pitch2D.numChannels = spec.channels;
    resource.res.pitch2D.width = level.width;
    resource.res.pitch2D.height = level.height;
    resource.res.pitch2D.pitchInBytes = level.pitch;
  }
  CUDA_TEXTURE_DESC sampler;
  std::memset(&sampler, 0, sizeof(sampler));
  for (int i = 0; i < 3; ++i) sampler.addressMode[i] = static_cast<CUaddress_mode>(spec.address[i]);
  sampler.filterMode = static_cast<CUfilter_mode>(spec.filter);
  sampler.flags = spec.flags;
  sampler.maxAnisotropy = spec.max_anisotropy;
  sampler.mipmapFilterMode = static_cast<CUfilter_mode>(spec.mip_filter);
  sampler.mipmapLevelBias = spec.mip_bias;
  sampler.minMipmapLevelClamp = spec.min_lod;
  sampler.maxMipmapLevelClamp = spec.max_lod;
  for (int i = 0; i < 4; ++i) sampler.borderColor[i] = spec.border[i];
  ScopedContext current(api, context_);
  CUtexObject object = 0;
  PVGPU_TRY(driver().Check(api.cuTexObjectCreate(&object, &resource, &sampler, nullptr),
                           "cuTexObjectCreate"));
  textures_[handle] = object;
  return static_cast<uint64_t>(object);
}

void CudaContext::DestroyTexture(uint64_t handle) {
  auto it = textures_.find(handle);
  if (it == textures_.end()) return;
  // Kernels submitted before the destroy may still read it: let them finish first (the error
  // of that work stays the guest's next synchronizing call's).
  WaitIdle();
  const DriverApi& api = driver().api();
  ScopedContext current(api, context_);
  (void)driver().Check(api.cuTexObjectDestroy(it->second), "cuTexObjectDestroy");
  textures_.erase(it);
}

}  // namespace pvgpu::adapters::cuda
