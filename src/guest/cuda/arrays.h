// The guest's records of CUDA arrays, mipmapped arrays, texture and surface objects
// (api_array.cc, api_texture.cc; docs/textures.md).
//
// An array lives on the host, in its context; the host answers its creation with the device
// address of its memory, laid out as texture::LayoutArray says, so a copy to or from an array
// is a pitched copy at addresses the guest computes (ArrayRegion). A mipmapped array's levels are
// CUarrays of their own that name the same host array and one level of it.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "common/texture.h"
#include "guest/cuda/handle_store.h"
#include "guest/cuda/objects.h"
#include "common/status.h"

namespace pvgpu::guest {

struct ArrayRecord {
  CUctx_st* ctx = nullptr;
  uint64_t ctx_handle = 0;  // the host context it was made in (a reset context has lost it)
  uint64_t handle = 0;      // the host's array
  uint64_t base = 0;        // device address of its first byte
  texture::ArrayLayout layout;
};

}  // namespace pvgpu::guest

struct CUarray_st {
  pvgpu::guest::Ref<pvgpu::guest::ArrayRecord> array;
  uint32_t level = 0;          // the level of a mipmapped array it stands for
  bool of_mipmapped = false;   // cuMipmappedArrayGetLevel's: not destroyed by cuArrayDestroy
};

struct CUmipmappedArray_st {
  pvgpu::guest::Ref<pvgpu::guest::ArrayRecord> array;
  std::vector<CUarray> levels;  // made by cuMipmappedArrayGetLevel, in its store
};

namespace pvgpu::guest {

HandleStore<CUarray_st>& ArrayStore();
HandleStore<CUmipmappedArray_st>& MipmappedStore();

// Whether the array's context is live and still the one it was made in.
Code LiveArray(const ArrayRecord& array);
// The live array `array` names, or an error: kInvalidHandle for an unknown or destroyed one
// (or one whose context was reset), kContextIsDestroyed when its context is gone.
Code FindArray(CUarray array, Ref<CUarray_st>* out);

// A box of an array level as device memory: the address of element (x bytes, y, z), the level's
// pitch and rows per slice; kInvalidValue when the box does not lie inside the level.
struct ArrayRegion {
  CUdeviceptr dptr = 0;
  size_t pitch = 0;
  size_t rows = 0;  // rows per slice
  CUctx_st* ctx = nullptr;
};
Code ArrayRegionOf(const CUarray_st& array, size_t x_bytes, size_t y, size_t z, size_t width_bytes,
                   size_t height, size_t depth, ArrayRegion* region);

// A texture (or surface) object in `ctx` over `resource`, as cuTexObjectCreate
// (cuSurfObjectCreate, sampler null) makes it; *out is its CUtexObject (api_texture.cc).
Code CreateTextureObject(CUctx_st* ctx, bool surface, const CUDA_RESOURCE_DESC* resource,
                         const CUDA_TEXTURE_DESC* sampler, unsigned long long* out);
// cuTexObjectDestroy / cuSurfObjectDestroy.
Code DestroyTextureObject(uint64_t value, bool surface);

// Texture and surface references (api_texref.cc). Before a launch of one of `module`'s
// kernels: binds the references of the module that changed since its last launch (the first
// error, say a binding the host refuses, is the launch's).
Code BindReferences(CUmod_st* module);
// Forgets the references of `module`, unloaded: their objects are destroyed while its context
// lives.
void DropReferencesOf(CUmod_st* module);
// Forgets the references of the modules of `ctx`, destroyed (their objects went with it).
void DropReferencesOfContext(CUctx_st* ctx);

}  // namespace pvgpu::guest
