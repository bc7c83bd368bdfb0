// Texture and surface objects on the cuda adapter (docs/textures.md, "On the cuda adapter").
//
// Linear and pitch-2D memory resources go to the host driver as they are. pvgpu's arrays are
// linear blocks of device memory (common/texture.h) that every copy addresses directly, but the
// driver samples 3D, layered, cubemap and mipmapped textures, and reads and writes surfaces,
// only through its own CUarrays. So each array block that a texture or surface object reads
// gets a shadow: a CUarray (or CUmipmappedArray) of the array's shape, made with the first
// object over the block and destroyed with the last. The block stays authoritative:
//
// - every Write, Copy and Memset of the context whose destination overlaps a block marks its
//   shadow dirty, and a launch first refreshes each dirty shadow from its block;
// - after a launch, each level a live surface object covers is copied back to its block, so
//   the copies that follow (and the next refresh) see what the kernel wrote.
//
// All of it is queued on the context's one stream, in order with the kernels. The driver's
// object is the value the session returns, so kernels pass it to the GPU unchanged; each
// session's objects live in its own CUDA context.
#include <cstring>

#include "adapters/cuda/completion_queue.h"
#include "adapters/cuda/cuda_adapter.h"
#include "adapters/cuda/cuda_context.h"

namespace pvgpu::adapters::cuda {

StatusOr<CudaContext::Shadow*> CudaContext::AcquireShadow(const texture::TextureSpec& spec) {
  auto found = shadows_.find(spec.base);
  if (found != shadows_.end()) {
    ++found->second.objects;
    return &found->second;
  }
  const DriverApi& api = driver().api();
  const bool mipmapped = spec.array_shape.levels > 1;
  if (api.cuMemcpy3DAsync == nullptr ||
      (mipmapped
           ? api.cuMipmappedArrayCreate == nullptr || api.cuMipmappedArrayGetLevel == nullptr ||
                 api.cuMipmappedArrayDestroy == nullptr
           : api.cuArray3DCreate == nullptr || api.cuArrayDestroy == nullptr)) {
    return Error(Code::kNotSupported,
                 mipmapped ? "the host driver lacks cuMipmappedArrayCreate/GetLevel/Destroy or "
                             "cuMemcpy3DAsync, which textures over mipmapped arrays need"
                           : "the host driver lacks cuArray3DCreate/cuArrayDestroy or "
                             "cuMemcpy3DAsync, which textures and surfaces over arrays need");
  }
  // The layout the guest and the session computed from the same descriptor.
  PVGPU_ASSIGN_OR_RETURN(texture::ArrayLayout layout, texture::LayoutArray(spec.array_shape));
  Shadow shadow;
  shadow.layout = std::move(layout);
  const texture::ArrayShape& shape = shadow.layout.shape;
  CUDA_ARRAY3D_DESCRIPTOR descriptor;
  std::memset(&descriptor, 0, sizeof(descriptor));
  descriptor.Width = shape.width;
  descriptor.Height = shape.height;
  descriptor.Depth = shape.depth;
  descriptor.Format = static_cast<CUarray_format>(shape.format);
  descriptor.NumChannels = shape.channels;
  // LAYERED, CUBEMAP, TEXTURE_GATHER as the guest asked; SURFACE_LDST whenever the guest's
  // array has it, so a surface object made after a texture finds the shadow usable.
  descriptor.Flags = shape.flags & texture::kArrayKnownFlags;
  if (mipmapped) {
    PVGPU_TRY(
        driver().Check(api.cuMipmappedArrayCreate(&shadow.mipmapped, &descriptor, shape.levels),
                       "cuMipmappedArrayCreate"));
    for (uint32_t l = 0; l < shape.levels; ++l) {
      CUarray level = nullptr;
      Status got = driver().Check(api.cuMipmappedArrayGetLevel(&level, shadow.mipmapped, l),
                                  "cuMipmappedArrayGetLevel");
      if (!got.ok()) {
        (void)api.cuMipmappedArrayDestroy(shadow.mipmapped);
        return got;
      }
      shadow.levels.push_back(level);
    }
  } else {
    PVGPU_TRY(driver().Check(api.cuArray3DCreate(&shadow.array, &descriptor), "cuArray3DCreate"));
    shadow.levels.push_back(shadow.array);
  }
  shadow.surfaces.assign(shadow.levels.size(), 0);
  shadow.objects = 1;
  shadow.dirty = true;  // filled from the block before the first launch that may read it
  // The driver's memory for it is the device's, though not the session's quota (the block is).
  AddUsed(static_cast<int64_t>(shadow.layout.bytes));
  return &shadows_.emplace(spec.base, std::move(shadow)).first->second;
}

void CudaContext::ReleaseShadow(uint64_t base) {
  auto it = shadows_.find(base);
  if (it == shadows_.end() || --it->second.objects != 0) return;
  const DriverApi& api = driver().api();
  if (it->second.mipmapped != nullptr) {
    (void)driver().Check(api.cuMipmappedArrayDestroy(it->second.mipmapped),
                         "cuMipmappedArrayDestroy");
  } else {
    (void)driver().Check(api.cuArrayDestroy(it->second.array), "cuArrayDestroy");
  }
  AddUsed(-static_cast<int64_t>(it->second.layout.bytes));
  shadows_.erase(it);
}

StatusOr<uint64_t> CudaContext::CreateTexture(uint64_t handle, const texture::TextureSpec& spec) {
  const DriverApi& api = driver().api();
  if (spec.surface ? api.cuSurfObjectCreate == nullptr || api.cuSurfObjectDestroy == nullptr
                   : api.cuTexObjectCreate == nullptr || api.cuTexObjectDestroy == nullptr) {
    return Error(Code::kNotSupported, spec.surface ? "the host driver has no surface objects"
                                                   : "the host driver has no texture objects");
  }
  if (spec.surface && !spec.array) {
    return Error(Code::kInvalidValue, "a surface is over an array");  // the session refuses it
  }
  ScopedContext current(api, context_);
  DriverObject object;
  object.surface = spec.surface;
  CUDA_RESOURCE_DESC resource;
  std::memset(&resource, 0, sizeof(resource));
  if (spec.array) {
    PVGPU_ASSIGN_OR_RETURN(Shadow * shadow, AcquireShadow(spec));
    object.shadow = spec.base;
    if (spec.array_all_levels && shadow->mipmapped != nullptr) {
      resource.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
      resource.res.mipmap.hMipmappedArray = shadow->mipmapped;
    } else {
      // One level (of a one-level array every level is that one).
      object.level = spec.array_all_levels ? 0 : spec.array_level;
      if (object.level >= shadow->levels.size()) {
        ReleaseShadow(spec.base);
        return Error(Code::kInvalidValue, "no such level");
      }
      resource.resType = CU_RESOURCE_TYPE_ARRAY;
      resource.res.array.hArray = shadow->levels[object.level];
    }
  } else {
    const texture::Level& level = spec.levels[0];
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
  }
  Status made;
  if (spec.surface) {
    CUsurfObject surface = 0;
    made = driver().Check(api.cuSurfObjectCreate(&surface, &resource), "cuSurfObjectCreate");
    object.value = surface;
  } else {
    CUDA_TEXTURE_DESC sampler;
    std::memset(&sampler, 0, sizeof(sampler));
    for (int i = 0; i < 3; ++i) {
      sampler.addressMode[i] = static_cast<CUaddress_mode>(spec.address[i]);
    }
    sampler.filterMode = static_cast<CUfilter_mode>(spec.filter);
    sampler.flags = spec.flags;
    sampler.maxAnisotropy = spec.max_anisotropy;
    sampler.mipmapFilterMode = static_cast<CUfilter_mode>(spec.mip_filter);
    sampler.mipmapLevelBias = spec.mip_bias;
    sampler.minMipmapLevelClamp = spec.min_lod;
    sampler.maxMipmapLevelClamp = spec.max_lod;
    for (int i = 0; i < 4; ++i) sampler.borderColor[i] = spec.border[i];
    CUtexObject texture = 0;
    made = driver().Check(api.cuTexObjectCreate(&texture, &resource, &sampler, nullptr),
                          "cuTexObjectCreate");
    object.value = texture;
  }
  if (!made.ok()) {
    if (object.shadow != 0) ReleaseShadow(object.shadow);
    return made;
  }
  if (object.surface) {
    ++shadows_.at(object.shadow).surfaces[object.level];
    ++live_surfaces_;
  }
  textures_[handle] = object;
  return object.value;
}

void CudaContext::DestroyObject(const DriverObject& object) {
  const DriverApi& api = driver().api();
  if (object.surface) {
    (void)driver().Check(api.cuSurfObjectDestroy(object.value), "cuSurfObjectDestroy");
    --shadows_.at(object.shadow).surfaces[object.level];
    --live_surfaces_;
  } else {
    (void)driver().Check(api.cuTexObjectDestroy(object.value), "cuTexObjectDestroy");
  }
  if (object.shadow != 0) ReleaseShadow(object.shadow);
}

void CudaContext::DestroyTexture(uint64_t handle) {
  auto it = textures_.find(handle);
  if (it == textures_.end()) return;
  // Kernels submitted before the destroy may still read it (and copies of its shadow may be
  // queued): let them finish first (the error of that work stays the guest's next
  // synchronizing call's).
  WaitIdle();
  ScopedContext current(driver().api(), context_);
  DestroyObject(it->second);
  textures_.erase(it);
}

void CudaContext::DropShadow(uint64_t base) {
  if (shadows_.find(base) == shadows_.end()) return;
  WaitIdle();
  ScopedContext current(driver().api(), context_);
  for (auto it = textures_.begin(); it != textures_.end();) {
    if (it->second.shadow == base) {
      DestroyObject(it->second);
      it = textures_.erase(it);
    } else {
      ++it;
    }
  }
}

Status CudaContext::CopyShadowLevel(uint64_t base, const Shadow& shadow, size_t index,
                                    bool to_shadow) {
  const texture::Level& level = shadow.layout.levels[index];
  CUDA_MEMCPY3D copy;
  std::memset(&copy, 0, sizeof(copy));
  const CUdeviceptr block = base + level.offset;
  // The block's rows are `pitch` apart and its slices (depth, layers, cube faces) `slice`
  // apart, which is pitch x height: the source (destination) height is the level's.
  if (to_shadow) {
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = block;
    copy.srcPitch = level.pitch;
    copy.srcHeight = level.slice / level.pitch;
    copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.dstArray = shadow.levels[index];
  } else {
    copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.srcArray = shadow.levels[index];
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = block;
    copy.dstPitch = level.pitch;
    copy.dstHeight = level.slice / level.pitch;
  }
  copy.WidthInBytes = level.width * shadow.layout.element_bytes;
  copy.Height = level.height;
  copy.Depth = level.bytes / level.slice;  // a 3D level's depth, or the layers (faces)
  return Submitted(driver().api().cuMemcpy3DAsync(&copy, stream_), "cuMemcpy3DAsync");
}

void CudaContext::MarkWritten(uint64_t dst, uint64_t size) {
  if (shadows_.empty() || size == 0) return;
  const uint64_t end = dst + size < dst ? UINT64_MAX : dst + size;
  // Blocks do not overlap: the candidates start at the last block at or before dst.
  auto it = shadows_.upper_bound(dst);
  if (it != shadows_.begin()) --it;
  for (; it != shadows_.end() && it->first < end; ++it) {
    if (it->first + it->second.layout.bytes > dst) it->second.dirty = true;
  }
}

Status CudaContext::RefreshShadows() {
  for (auto& [base, shadow] : shadows_) {
    if (!shadow.dirty) continue;
    for (size_t l = 0; l < shadow.levels.size(); ++l) {
      PVGPU_TRY(CopyShadowLevel(base, shadow, l, true));
    }
    shadow.dirty = false;
  }
  return Status::Ok();
}

Status CudaContext::WriteBackSurfaces() {
  if (live_surfaces_ == 0) return Status::Ok();
  Status status;
  for (auto& [base, shadow] : shadows_) {
    for (size_t l = 0; l < shadow.levels.size(); ++l) {
      if (shadow.surfaces[l] == 0) continue;
      Status copied = CopyShadowLevel(base, shadow, l, false);
      // A copy that failed leaves the block behind the driver's array; the shadow is not
      // marked dirty, which would overwrite what the kernel wrote with the older block.
      if (!copied.ok() && status.ok()) status = copied;
    }
  }
  return status;
}

}  // namespace pvgpu::adapters::cuda
