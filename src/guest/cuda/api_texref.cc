// Driver API: texture and surface references, the legacy form of texture and surface objects
// (docs/textures.md). A reference is a module variable that kernels read through (`.global
// .texref t;`, `tex.2d ... [t, {x, y}]`); the host's PTX front end makes it a 64-bit variable
// holding an object's handle (ptx/references.h), named with a prefix among the module's
// globals. Here a CUtexref (CUsurfref) keeps what cuTexRefSet* (cuSurfRefSetArray) said; before
// the next launch of one of its module's kernels, BindReferences makes an object of it and
// writes the handle into the variable, so the binding a kernel sees is the one its launch
// followed, as with CUDA's references.
//
// Rebinding waits for the context's submitted work first (a kernel in flight keeps reading
// the old object until it ends), which only programs that rebind between launches pay.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "guest/cuda/arrays.h"
#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"
#include "ptx/references.h"

namespace pvgpu::guest {

// What a reference is bound to and how it samples, as the setters left it.
struct ReferenceState {
  enum class Bound : uint8_t { kNone, kArray, kMipmapped, kLinear, kPitch2D };
  Bound bound = Bound::kNone;
  CUarray array = nullptr;
  CUmipmappedArray mipmapped = nullptr;
  CUdeviceptr dptr = 0;
  size_t bytes = 0;   // kLinear
  size_t width = 0;   // kPitch2D
  size_t height = 0;  // kPitch2D
  size_t pitch = 0;   // kPitch2D
  // The format of memory bindings (an array's own format replaces it when bound). CUDA does
  // not document a default; a single float is what kernels reading linear memory most often
  // expect.
  CUarray_format format = CU_AD_FORMAT_FLOAT;
  int channels = 1;
  CUaddress_mode address[3] = {CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP,
                               CU_TR_ADDRESS_MODE_CLAMP};
  CUfilter_mode filter = CU_TR_FILTER_MODE_POINT;
  CUfilter_mode mip_filter = CU_TR_FILTER_MODE_POINT;
  float mip_bias = 0;
  float min_lod = 0;
  float max_lod = 0;
  unsigned int max_anisotropy = 0;
  float border[4] = {0, 0, 0, 0};
  unsigned int flags = 0;
};

// One texture or surface reference: of a module (cuModuleGetTexRef, cuModuleGetSurfRef), or
// made alone by cuTexRefCreate, which no kernel reads.
struct Reference {
  bool surface = false;
  CUmod_st* module = nullptr;  // null: cuTexRefCreate's
  CUctx_st* ctx = nullptr;
  std::string name;
  uint64_t variable = 0;  // the module variable holding the bound object's handle
  Mutex mutex;            // held while binding, across the host's round trips
  ReferenceState state GUARDED_BY(mutex);
  uint64_t object GUARDED_BY(mutex) = 0;  // the object bound now (0: none)
  std::atomic<bool> changed{false};       // since the last binding
};

}  // namespace pvgpu::guest

struct CUtexref_st : pvgpu::guest::Reference {};
struct CUsurfref_st : pvgpu::guest::Reference {};

namespace pvgpu::guest {

namespace {

// References that changed since their last binding, in all modules: launches look no further
// while it is 0.
std::atomic<int> changed_references{0};

// The live references, by handle; a module's are made on first use, under `creation`.
struct ReferenceStore {
  HandleStore<Reference> refs;
  Mutex creation;

  // The module's reference `name` of that kind, made on first use; null when the module has
  // no such variable.
  Reference* Get(CUmod_st* module, const std::string& name, bool surface) EXCLUDES(creation) {
    const std::string variable_name =
        std::string(surface ? ptx::kSurfaceReferencePrefix : ptx::kTextureReferencePrefix) + name;
    const protocol::GlobalDescription* variable = nullptr;
    for (const auto& g : module->description.globals) {
      if (g.name == variable_name && g.size == 8) variable = &g;
    }
    if (variable == nullptr) return nullptr;
    MutexLock lock(&creation);
    std::vector<Ref<Reference>> found = refs.Select([&](const Reference& ref) {
      return ref.module == module && ref.surface == surface && ref.name == name;
    });
    if (!found.empty()) return found.front().get();
    Ref<Reference> ref = surface ? Ref<Reference>(std::make_shared<CUsurfref_st>())
                                 : Ref<Reference>(std::make_shared<CUtexref_st>());
    ref->surface = surface;
    ref->module = module;
    ref->ctx = module->ctx;
    ref->name = name;
    ref->variable = variable->dptr;
    return refs.Add(std::move(ref));
  }

  // The reference behind `handle` if it is of that kind.
  Ref<Reference> Find(const void* handle, bool surface) const {
    Ref<Reference> ref = refs.Find(handle);
    return ref != nullptr && ref->surface == surface ? ref : nullptr;
  }
};

ReferenceStore& References() {
  static auto* store = new ReferenceStore();
  return *store;
}

void MarkChanged(Reference& ref) {
  if (ref.module != nullptr && !ref.changed.exchange(true)) changed_references.fetch_add(1);
}

void ClearChanged(Reference& ref) {
  if (ref.changed.exchange(false)) changed_references.fetch_sub(1);
}

// Runs `set` on the state of the texture reference behind `handle`, and notes the change.
template <typename Set>
Code SetTexture(CUtexref handle, Set set) {
  Ref<Reference> ref = References().Find(handle, false);
  if (ref == nullptr) return Code::kInvalidHandle;
  MutexLock lock(&ref->mutex);
  if (Code code = set(ref->state); code != Code::kOk) return code;
  MarkChanged(*ref);
  return Code::kOk;
}

template <typename Get>
Code GetTexture(CUtexref handle, Get get) {
  Ref<Reference> ref = References().Find(handle, false);
  if (ref == nullptr) return Code::kInvalidHandle;
  MutexLock lock(&ref->mutex);
  return get(static_cast<const ReferenceState&>(ref->state));
}

// One field of the state, set or read.
template <typename V>
Code WriteField(CUtexref handle, V ReferenceState::*field, V value) {
  return SetTexture(handle, [&](ReferenceState& s) {
    s.*field = value;
    return Code::kOk;
  });
}

template <typename T, typename V>
Code ReadField(T* out, CUtexref handle, V ReferenceState::*field) {
  return GetTexture(handle, [&](const ReferenceState& s) {
    *out = static_cast<T>(s.*field);
    return Code::kOk;
  });
}

bool ValidAddressMode(CUaddress_mode mode) {
  return mode == CU_TR_ADDRESS_MODE_WRAP || mode == CU_TR_ADDRESS_MODE_CLAMP ||
         mode == CU_TR_ADDRESS_MODE_MIRROR || mode == CU_TR_ADDRESS_MODE_BORDER;
}

bool ValidFilterMode(CUfilter_mode mode) {
  return mode == CU_TR_FILTER_MODE_POINT || mode == CU_TR_FILTER_MODE_LINEAR;
}

// The resource and sampler of a binding; false when nothing is bound.
bool Describe(const Reference& ref, const ReferenceState& s, CUDA_RESOURCE_DESC* resource,
              CUDA_TEXTURE_DESC* sampler) {
  std::memset(resource, 0, sizeof(*resource));
  std::memset(sampler, 0, sizeof(*sampler));
  switch (s.bound) {
    case ReferenceState::Bound::kNone:
      return false;
    case ReferenceState::Bound::kArray:
      resource->resType = CU_RESOURCE_TYPE_ARRAY;
      resource->res.array.hArray = s.array;
      break;
    case ReferenceState::Bound::kMipmapped:
      resource->resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
      resource->res.mipmap.hMipmappedArray = s.mipmapped;
      break;
    case ReferenceState::Bound::kLinear:
      resource->resType = CU_RESOURCE_TYPE_LINEAR;
      resource->res.linear.devPtr = s.dptr;
      resource->res.linear.format = s.format;
      resource->res.linear.numChannels = static_cast<unsigned int>(s.channels);
      resource->res.linear.sizeInBytes = s.bytes;
      break;
    case ReferenceState::Bound::kPitch2D:
      resource->resType = CU_RESOURCE_TYPE_PITCH2D;
      resource->res.pitch2D.devPtr = s.dptr;
      resource->res.pitch2D.format = s.format;
      resource->res.pitch2D.numChannels = static_cast<unsigned int>(s.channels);
      resource->res.pitch2D.width = s.width;
      resource->res.pitch2D.height = s.height;
      resource->res.pitch2D.pitchInBytes = s.pitch;
      break;
  }
  if (!ref.surface) {
    for (int i = 0; i < 3; ++i) sampler->addressMode[i] = s.address[i];
    sampler->filterMode = s.filter;
    sampler->flags = s.flags;
    sampler->maxAnisotropy = s.max_anisotropy;
    sampler->mipmapFilterMode = s.mip_filter;
    sampler->mipmapLevelBias = s.mip_bias;
    sampler->minMipmapLevelClamp = s.min_lod;
    sampler->maxMipmapLevelClamp = s.max_lod;
    for (int i = 0; i < 4; ++i) sampler->borderColor[i] = s.border[i];
  }
  return true;
}

// Makes the object of the reference's binding and writes its handle into the module variable.
Code Bind(Reference& ref) {
  MutexLock lock(&ref.mutex);
  if (!ref.changed.load()) return Code::kOk;  // another thread bound it meanwhile
  CUctx_st* ctx = ref.ctx;
  if (!LiveContext(ctx)) return Code::kContextIsDestroyed;
  CUDA_RESOURCE_DESC resource;
  CUDA_TEXTURE_DESC sampler;
  unsigned long long object = 0;
  if (Describe(ref, ref.state, &resource, &sampler)) {
    if (Code code = CreateTextureObject(ctx, ref.surface, &resource,
                                        ref.surface ? nullptr : &sampler, &object);
        code != Code::kOk) {
      PVGPU_WARN((ref.surface ? "surface" : "texture")
                 << " reference '" << ref.name
                 << "': its binding was refused: " << ResultName(code));
      return code;
    }
  }
  // Kernels in flight read the old object until they end; so does the variable.
  Code code = ref.object != 0 ? api::CtxSynchronize(ctx) : Code::kOk;
  if (code == Code::kOk) {
    const uint64_t value = object;
    StreamRef stream;
    stream.ctx = ctx;
    code = CopyHtoD(ref.variable, &value, sizeof(value), stream, false);
  }
  if (code == Code::kOk) code = api::CtxSynchronize(ctx);
  if (code != Code::kOk) {
    if (object != 0) (void)DestroyTextureObject(object, ref.surface);
    return code;
  }
  if (ref.object != 0) (void)DestroyTextureObject(ref.object, ref.surface);
  ref.object = object;
  ClearChanged(ref);
  return Code::kOk;
}

void Forget(const std::vector<Ref<Reference>>& refs, bool destroy_objects) {
  for (const Ref<Reference>& ref : refs) {
    MutexLock lock(&ref->mutex);
    ClearChanged(*ref);
    if (destroy_objects && ref->object != 0 && LiveContext(ref->ctx)) {
      (void)DestroyTextureObject(ref->object, ref->surface);
    }
    ref->object = 0;
  }
}

}  // namespace

Code BindReferences(CUmod_st* module) {
  if (changed_references.load(std::memory_order_acquire) == 0) return Code::kOk;
  const std::vector<Ref<Reference>> changed = References().refs.Select(
      [module](const Reference& ref) { return ref.module == module && ref.changed.load(); });
  for (const Ref<Reference>& ref : changed) {
    if (Code code = Bind(*ref); code != Code::kOk) return code;
  }
  return Code::kOk;
}

void DropReferencesOf(CUmod_st* module) {
  Forget(References().refs.TakeIf([module](const Reference& ref) { return ref.module == module; }),
         true);
}

void DropReferencesOfContext(CUctx_st* ctx) {
  Forget(References().refs.TakeIf(
             [ctx](const Reference& ref) { return ref.module != nullptr && ref.ctx == ctx; }),
         false);
}

namespace api {

Code ModuleGetTexRef(CUtexref* pTexRef, CUmod_st* hmod, const char* name) {
  Reference* ref = References().Get(hmod, name, false);
  if (ref == nullptr) return Code::kNotFound;
  *pTexRef = static_cast<CUtexref_st*>(ref);
  return Code::kOk;
}

Code ModuleGetSurfRef(CUsurfref* pSurfRef, CUmod_st* hmod, const char* name) {
  Reference* ref = References().Get(hmod, name, true);
  if (ref == nullptr) return Code::kNotFound;
  *pSurfRef = static_cast<CUsurfref_st*>(ref);
  return Code::kOk;
}

Code TexRefCreate(CUtexref* pTexRef) {
  auto ref = std::make_shared<CUtexref_st>();
  ref->name = "(cuTexRefCreate)";
  *pTexRef = static_cast<CUtexref_st*>(References().refs.Add(std::move(ref)));
  return Code::kOk;
}

Code TexRefDestroy(CUtexref hTexRef) {
  Ref<Reference> ref = References().Find(hTexRef, false);
  if (ref == nullptr) return Code::kInvalidHandle;
  if (ref->module != nullptr) return Code::kInvalidValue;  // its module's: unloaded with it
  (void)References().refs.Take(hTexRef);
  return Code::kOk;
}

Code TexRefSetArray(CUtexref hTexRef, CUarray hArray, unsigned int Flags) {
  if (Flags != 0 && Flags != CU_TRSA_OVERRIDE_FORMAT) return Code::kInvalidValue;
  Ref<CUarray_st> array;
  if (Code code = FindArray(hArray, &array); code != Code::kOk) return code;
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    s.bound = ReferenceState::Bound::kArray;
    s.array = hArray;
    s.mipmapped = nullptr;
    // The array's format is the reference's (CU_TRSA_OVERRIDE_FORMAT).
    s.format = static_cast<CUarray_format>(array->array->layout.shape.format);
    s.channels = static_cast<int>(array->array->layout.shape.channels);
    return Code::kOk;
  });
}

Code TexRefSetMipmappedArray(CUtexref hTexRef, CUmipmappedArray hMipmappedArray,
                             unsigned int Flags) {
  if (Flags != 0 && Flags != CU_TRSA_OVERRIDE_FORMAT) return Code::kInvalidValue;
  Ref<CUmipmappedArray_st> mipmapped = MipmappedStore().Find(hMipmappedArray);
  if (mipmapped == nullptr) return Code::kInvalidHandle;
  if (Code code = LiveArray(*mipmapped->array); code != Code::kOk) return code;
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    s.bound = ReferenceState::Bound::kMipmapped;
    s.array = nullptr;
    s.mipmapped = hMipmappedArray;
    s.format = static_cast<CUarray_format>(mipmapped->array->layout.shape.format);
    s.channels = static_cast<int>(mipmapped->array->layout.shape.channels);
    return Code::kOk;
  });
}

// Memory from cuMemAlloc needs no offset; pvgpu takes any address the object can be made on.
Code TexRefSetAddress_v2(size_t* ByteOffset, CUtexref hTexRef, CUdeviceptr dptr, size_t bytes) {
  if (ByteOffset != nullptr) *ByteOffset = 0;
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    s.bound = ReferenceState::Bound::kLinear;
    s.array = nullptr;
    s.mipmapped = nullptr;
    s.dptr = dptr;
    s.bytes = bytes;
    return Code::kOk;
  });
}

Code TexRefSetAddress2D_v3(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr,
                           size_t Pitch) {
  if (texture::Describe(desc->Format).bytes == 0) return Code::kInvalidValue;
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    s.bound = ReferenceState::Bound::kPitch2D;
    s.array = nullptr;
    s.mipmapped = nullptr;
    s.dptr = dptr;
    s.width = desc->Width;
    s.height = desc->Height;
    s.pitch = Pitch;
    s.format = desc->Format;
    s.channels = static_cast<int>(desc->NumChannels);
    return Code::kOk;
  });
}

Code TexRefSetFormat(CUtexref hTexRef, CUarray_format fmt, int NumPackedComponents) {
  if (texture::Describe(fmt).bytes == 0) return Code::kInvalidValue;
  if (NumPackedComponents != 1 && NumPackedComponents != 2 && NumPackedComponents != 4) {
    return Code::kInvalidValue;
  }
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    s.format = fmt;
    s.channels = NumPackedComponents;
    return Code::kOk;
  });
}

Code TexRefSetAddressMode(CUtexref hTexRef, int dim, CUaddress_mode am) {
  if (dim < 0 || dim > 2 || !ValidAddressMode(am)) return Code::kInvalidValue;
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    s.address[dim] = am;
    return Code::kOk;
  });
}

Code TexRefSetFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  if (!ValidFilterMode(fm)) return Code::kInvalidValue;
  return WriteField(hTexRef, &ReferenceState::filter, fm);
}

Code TexRefSetMipmapFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  if (!ValidFilterMode(fm)) return Code::kInvalidValue;
  return WriteField(hTexRef, &ReferenceState::mip_filter, fm);
}

Code TexRefSetMipmapLevelBias(CUtexref hTexRef, float bias) {
  return WriteField(hTexRef, &ReferenceState::mip_bias, bias);
}

Code TexRefSetMipmapLevelClamp(CUtexref hTexRef, float minMipmapLevelClamp,
                               float maxMipmapLevelClamp) {
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    s.min_lod = minMipmapLevelClamp;
    s.max_lod = maxMipmapLevelClamp;
    return Code::kOk;
  });
}

Code TexRefSetMaxAnisotropy(CUtexref hTexRef, unsigned int maxAniso) {
  return WriteField(hTexRef, &ReferenceState::max_anisotropy, maxAniso);
}

Code TexRefSetBorderColor(CUtexref hTexRef, float* pBorderColor) {
  return SetTexture(hTexRef, [&](ReferenceState& s) {
    for (int i = 0; i < 4; ++i) s.border[i] = pBorderColor[i];
    return Code::kOk;
  });
}

Code TexRefSetFlags(CUtexref hTexRef, unsigned int Flags) {
  constexpr unsigned int kKnown = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                                  CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                                  CU_TRSF_SEAMLESS_CUBEMAP;
  if ((Flags & ~kKnown) != 0) return Code::kInvalidValue;
  return WriteField(hTexRef, &ReferenceState::flags, Flags);
}

Code TexRefGetAddress_v2(CUdeviceptr* pdptr, CUtexref hTexRef) {
  return GetTexture(hTexRef, [&](const ReferenceState& s) {
    if (s.bound != ReferenceState::Bound::kLinear && s.bound != ReferenceState::Bound::kPitch2D) {
      return Code::kInvalidValue;  // bound to no device memory
    }
    *pdptr = s.dptr;
    return Code::kOk;
  });
}

Code TexRefGetArray(CUarray* phArray, CUtexref hTexRef) {
  return GetTexture(hTexRef, [&](const ReferenceState& s) {
    if (s.bound != ReferenceState::Bound::kArray) return Code::kInvalidValue;
    *phArray = s.array;
    return Code::kOk;
  });
}

Code TexRefGetMipmappedArray(CUmipmappedArray* phMipmappedArray, CUtexref hTexRef) {
  return GetTexture(hTexRef, [&](const ReferenceState& s) {
    if (s.bound != ReferenceState::Bound::kMipmapped) return Code::kInvalidValue;
    *phMipmappedArray = s.mipmapped;
    return Code::kOk;
  });
}

Code TexRefGetAddressMode(CUaddress_mode* pam, CUtexref hTexRef, int dim) {
  if (dim < 0 || dim > 2) return Code::kInvalidValue;
  return GetTexture(hTexRef, [&](const ReferenceState& s) {
    *pam = s.address[dim];
    return Code::kOk;
  });
}

Code TexRefGetFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return ReadField(pfm, hTexRef, &ReferenceState::filter);
}

Code TexRefGetFormat(CUarray_format* pFormat, int* pNumChannels, CUtexref hTexRef) {
  return GetTexture(hTexRef, [&](const ReferenceState& s) {
    if (pFormat != nullptr) *pFormat = s.format;
    if (pNumChannels != nullptr) *pNumChannels = s.channels;
    return Code::kOk;
  });
}

Code TexRefGetMipmapFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return ReadField(pfm, hTexRef, &ReferenceState::mip_filter);
}

Code TexRefGetMipmapLevelBias(float* pbias, CUtexref hTexRef) {
  return ReadField(pbias, hTexRef, &ReferenceState::mip_bias);
}

Code TexRefGetMipmapLevelClamp(float* pminMipmapLevelClamp, float* pmaxMipmapLevelClamp,
                               CUtexref hTexRef) {
  return GetTexture(hTexRef, [&](const ReferenceState& s) {
    *pminMipmapLevelClamp = s.min_lod;
    *pmaxMipmapLevelClamp = s.max_lod;
    return Code::kOk;
  });
}

Code TexRefGetMaxAnisotropy(int* pmaxAniso, CUtexref hTexRef) {
  return ReadField(pmaxAniso, hTexRef, &ReferenceState::max_anisotropy);
}

Code TexRefGetBorderColor(float* pBorderColor, CUtexref hTexRef) {
  return GetTexture(hTexRef, [&](const ReferenceState& s) {
    for (int i = 0; i < 4; ++i) pBorderColor[i] = s.border[i];
    return Code::kOk;
  });
}

Code TexRefGetFlags(unsigned int* pFlags, CUtexref hTexRef) {
  return ReadField(pFlags, hTexRef, &ReferenceState::flags);
}

Code SurfRefSetArray(CUsurfref hSurfRef, CUarray hArray, unsigned int Flags) {
  if (Flags != 0) return Code::kInvalidValue;
  Ref<Reference> ref = References().Find(hSurfRef, true);
  if (ref == nullptr) return Code::kInvalidHandle;
  Ref<CUarray_st> array;
  if (Code code = FindArray(hArray, &array); code != Code::kOk) return code;
  // CUDA asks for an array made to be a surface; the host checks it again at binding.
  if ((array->array->layout.shape.flags & texture::kArraySurfaceLdst) == 0) {
    return Code::kInvalidValue;
  }
  MutexLock lock(&ref->mutex);
  ref->state.bound = ReferenceState::Bound::kArray;
  ref->state.array = hArray;
  MarkChanged(*ref);
  return Code::kOk;
}

Code SurfRefGetArray(CUarray* phArray, CUsurfref hSurfRef) {
  Ref<Reference> ref = References().Find(hSurfRef, true);
  if (ref == nullptr) return Code::kInvalidHandle;
  MutexLock lock(&ref->mutex);
  if (ref->state.bound != ReferenceState::Bound::kArray) return Code::kInvalidValue;
  *phArray = ref->state.array;
  return Code::kOk;
}

// CUDA 2.x's way to give a function a texture: module references are every kernel's of the
// module already; a reference of cuTexRefCreate's has no variable a kernel could read.
Code ParamSetTexRef(CUfunc_st* hfunc, int texunit, CUtexref hTexRef) {
  if (texunit != CU_PARAM_TR_DEFAULT) return Code::kInvalidValue;
  Ref<Reference> ref = References().Find(hTexRef, false);
  if (ref == nullptr) return Code::kInvalidHandle;
  if (ref->module == hfunc->module) return Code::kOk;
  PVGPU_WARN(
      "cuParamSetTexRef: only the texture references of the function's own module can "
      "be read by its kernels");
  return Code::kNotSupported;
}

}  // namespace api
}  // namespace pvgpu::guest
