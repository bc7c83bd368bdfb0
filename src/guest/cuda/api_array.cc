// Driver API: CUDA arrays and mipmapped arrays, and the 1D copies to, from and between them
// (arrays.h says how an array is laid out; the 2D and 3D copies are in api_memory_2d.cc).
#include <cstring>

#include "guest/cuda/arrays.h"
#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

HandleStore<CUarray_st>& ArrayStore() {
  static auto* store = new HandleStore<CUarray_st>();
  return *store;
}

HandleStore<CUmipmappedArray_st>& MipmappedStore() {
  static auto* store = new HandleStore<CUmipmappedArray_st>();
  return *store;
}

Code LiveArray(const ArrayRecord& array) {
  if (!LiveContext(array.ctx)) return Code::kContextIsDestroyed;
  if (array.ctx->handle.load() != array.ctx_handle) return Code::kInvalidHandle;
  return Code::kOk;
}

namespace {

Code CreateOnHost(CUctx_st* ctx, const texture::ArrayShape& shape, Ref<ArrayRecord>* out) {
  StatusOr<texture::ArrayLayout> layout = texture::LayoutArray(shape);
  if (!layout.ok()) {
    PVGPU_DEBUG("array refused: " << layout.status().message());
    return layout.status().code();
  }
  auto array = std::make_shared<ArrayRecord>();
  array->ctx = ctx;
  array->ctx_handle = ctx->handle.load();
  array->handle = Client::NewHandle();
  array->layout = std::move(*layout);
  protocol::ArrayCreateRequest request;
  request.ctx = array->ctx_handle;
  request.array = array->handle;
  request.width = shape.width;
  request.height = shape.height;
  request.depth = shape.depth;
  request.format = shape.format;
  request.channels = shape.channels;
  request.flags = shape.flags;
  request.levels = shape.levels;
  protocol::ArrayCreateReply reply;
  if (Code code = ctx->client->Call(request, {}, &reply); code != Code::kOk) return code;
  array->base = reply.dptr;
  objects().device_memory.Assign(array->base, array->layout.bytes, ctx);
  *out = std::move(array);
  return Code::kOk;
}

void DestroyOnHost(const ArrayRecord& array) {
  objects().device_memory.TakeBase(array.base);
  if (LiveArray(array) != Code::kOk) return;  // gone with its context
  protocol::ArrayDestroyRequest request;
  request.ctx = array.ctx_handle;
  request.array = array.handle;
  (void)array.ctx->client->Post(request);
}

texture::ArrayShape ShapeOf(const CUDA_ARRAY3D_DESCRIPTOR& d, uint32_t levels) {
  texture::ArrayShape shape;
  shape.format = static_cast<uint32_t>(d.Format);
  shape.channels = d.NumChannels;
  shape.width = d.Width;
  shape.height = d.Height;
  shape.depth = d.Depth;
  shape.flags = d.Flags;
  shape.levels = levels;
  return shape;
}

void Describe3D(const CUarray_st& a, CUDA_ARRAY3D_DESCRIPTOR* d) {
  const texture::ArrayShape& s = a.array->layout.shape;
  const texture::Level& level = a.array->layout.levels[a.level];
  std::memset(d, 0, sizeof(*d));
  d->Format = static_cast<CUarray_format>(s.format);
  d->NumChannels = s.channels;
  d->Flags = s.flags;
  d->Width = level.width;
  d->Height = s.height == 0 ? 0 : level.height;
  d->Depth = texture::GeometryOf(s) == texture::Geometry::k3D ? level.depth : s.depth;
}

// `count` bytes at `offset` of an array level seen as one run of bytes (levels are tightly laid
// out: rows follow each other).
Code Linear(CUarray handle, size_t offset, size_t count, CUdeviceptr* dptr) {
  Ref<CUarray_st> array;
  if (Code code = FindArray(handle, &array); code != Code::kOk) return code;
  const texture::Level& level = array->array->layout.levels[array->level];
  if (offset > level.bytes || count > level.bytes - offset) return Code::kInvalidValue;
  *dptr = array->array->base + level.offset + offset;
  return Code::kOk;
}

Code Stream(const StreamRef* given, StreamRef* out) {
  if (given != nullptr) {
    *out = *given;
    return Code::kOk;
  }
  return DefaultStream(out);
}

}  // namespace

Code FindArray(CUarray handle, Ref<CUarray_st>* out) {
  Ref<CUarray_st> array = ArrayStore().Find(handle);
  if (array == nullptr) return Code::kInvalidHandle;
  if (Code code = LiveArray(*array->array); code != Code::kOk) return code;
  *out = std::move(array);
  return Code::kOk;
}

Code ArrayRegionOf(const CUarray_st& array, size_t x_bytes, size_t y, size_t z, size_t width_bytes,
                   size_t height, size_t depth, ArrayRegion* region) {
  const texture::ArrayLayout& layout = array.array->layout;
  const texture::Level& level = layout.levels[array.level];
  const uint64_t slices =
      texture::GeometryOf(layout.shape) == texture::Geometry::k3D ? level.depth : layout.slices;
  const uint64_t row = level.width * layout.element_bytes;
  if (x_bytes > row || width_bytes > row - x_bytes || y > level.height ||
      height > level.height - y || z > slices || depth > slices - z) {
    return Code::kInvalidValue;
  }
  region->dptr = array.array->base + level.offset + z * level.slice + y * level.pitch + x_bytes;
  region->pitch = level.pitch;
  region->rows = level.height;
  region->ctx = array.array->ctx;
  return Code::kOk;
}

namespace api {

Code ArrayCreate_v2(CUctx_st* ctx, CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = pAllocateArray->Width;
  d.Height = pAllocateArray->Height;
  d.Format = pAllocateArray->Format;
  d.NumChannels = pAllocateArray->NumChannels;
  return Array3DCreate_v2(ctx, pHandle, &d);
}

Code Array3DCreate_v2(CUctx_st* ctx, CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  auto array = std::make_shared<CUarray_st>();
  if (Code code = CreateOnHost(ctx, ShapeOf(*pAllocateArray, 1), &array->array);
      code != Code::kOk) {
    return code;
  }
  *pHandle = ArrayStore().Add(std::move(array));
  return Code::kOk;
}

Code ArrayDestroy(CUarray hArray) {
  Ref<CUarray_st> array = ArrayStore().Find(hArray);
  if (array == nullptr || array->of_mipmapped) return Code::kInvalidHandle;
  array = ArrayStore().Take(hArray);
  if (array == nullptr) return Code::kInvalidHandle;  // another thread destroyed it meanwhile
  DestroyOnHost(*array->array);
  return Code::kOk;
}

Code ArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  Ref<CUarray_st> array;
  if (Code code = FindArray(hArray, &array); code != Code::kOk) return code;
  CUDA_ARRAY3D_DESCRIPTOR d;
  Describe3D(*array, &d);
  pArrayDescriptor->Width = d.Width;
  pArrayDescriptor->Height = d.Height;
  pArrayDescriptor->Format = d.Format;
  pArrayDescriptor->NumChannels = d.NumChannels;
  return Code::kOk;
}

Code Array3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  Ref<CUarray_st> array;
  if (Code code = FindArray(hArray, &array); code != Code::kOk) return code;
  Describe3D(*array, pArrayDescriptor);
  return Code::kOk;
}

// pvgpu has no multi-planar formats (NV12 and the like), and a plane is asked of those only.
Code ArrayGetPlane(CUarray* pPlaneArray, CUarray hArray, unsigned int planeIdx) {
  (void)pPlaneArray;
  (void)planeIdx;
  Ref<CUarray_st> array;
  if (Code code = FindArray(hArray, &array); code != Code::kOk) return code;
  return Code::kInvalidValue;
}

Code ArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUarray array,
                                const Device& device) {
  (void)device;
  Ref<CUarray_st> record;
  if (Code code = FindArray(array, &record); code != Code::kOk) return code;
  std::memset(memoryRequirements, 0, sizeof(*memoryRequirements));
  memoryRequirements->size = record->array->layout.bytes;
  memoryRequirements->alignment = 256;
  return Code::kOk;
}

Code MipmappedArrayCreate(CUctx_st* ctx, CUmipmappedArray* pHandle,
                          const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                          unsigned int numMipmapLevels) {
  auto mipmapped = std::make_shared<CUmipmappedArray_st>();
  if (Code code = CreateOnHost(ctx, ShapeOf(*pMipmappedArrayDesc, numMipmapLevels),
                               &mipmapped->array);
      code != Code::kOk) {
    return code;
  }
  // Every level's CUarray at once, so that the record never changes after it is stored.
  for (uint32_t l = 0; l < numMipmapLevels; ++l) {
    auto level = std::make_shared<CUarray_st>();
    level->array = mipmapped->array;
    level->level = l;
    level->of_mipmapped = true;
    mipmapped->levels.push_back(ArrayStore().Add(std::move(level)));
  }
  *pHandle = MipmappedStore().Add(std::move(mipmapped));
  return Code::kOk;
}

Code MipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                            unsigned int level) {
  Ref<CUmipmappedArray_st> mipmapped = MipmappedStore().Find(hMipmappedArray);
  if (mipmapped == nullptr) return Code::kInvalidHandle;
  if (level >= mipmapped->levels.size()) return Code::kInvalidValue;
  *pLevelArray = mipmapped->levels[level];
  return Code::kOk;
}

Code MipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  Ref<CUmipmappedArray_st> mipmapped = MipmappedStore().Take(hMipmappedArray);
  if (mipmapped == nullptr) return Code::kInvalidHandle;
  for (CUarray level : mipmapped->levels) (void)ArrayStore().Take(level);
  DestroyOnHost(*mipmapped->array);
  return Code::kOk;
}

Code MipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                         CUmipmappedArray mipmap, const Device& device) {
  (void)device;
  Ref<CUmipmappedArray_st> mipmapped = MipmappedStore().Find(mipmap);
  if (mipmapped == nullptr) return Code::kInvalidHandle;
  std::memset(memoryRequirements, 0, sizeof(*memoryRequirements));
  memoryRequirements->size = mipmapped->array->layout.bytes;
  memoryRequirements->alignment = 256;
  return Code::kOk;
}

// The 1D copies: an array level seen as a run of bytes.
Code MemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount) {
  CUdeviceptr dst = 0;
  StreamRef stream;
  if (Code code = Linear(dstArray, dstOffset, ByteCount, &dst); code != Code::kOk) return code;
  if (ByteCount == 0) return Code::kOk;
  if (Code code = Stream(nullptr, &stream); code != Code::kOk) return code;
  return CopyHtoD(dst, srcHost, ByteCount, stream, false);
}

Code MemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount,
                        const StreamRef& hStream) {
  CUdeviceptr dst = 0;
  if (Code code = Linear(dstArray, dstOffset, ByteCount, &dst); code != Code::kOk) return code;
  if (ByteCount == 0) return Code::kOk;
  return CopyHtoD(dst, srcHost, ByteCount, hStream, true);
}

Code MemcpyAtoH_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  CUdeviceptr src = 0;
  StreamRef stream;
  if (Code code = Linear(srcArray, srcOffset, ByteCount, &src); code != Code::kOk) return code;
  if (ByteCount == 0) return Code::kOk;
  if (Code code = Stream(nullptr, &stream); code != Code::kOk) return code;
  return CopyDtoH(dstHost, src, ByteCount, stream, false);
}

Code MemcpyAtoHAsync_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                        const StreamRef& hStream) {
  CUdeviceptr src = 0;
  if (Code code = Linear(srcArray, srcOffset, ByteCount, &src); code != Code::kOk) return code;
  if (ByteCount == 0) return Code::kOk;
  return CopyDtoH(dstHost, src, ByteCount, hStream, true);
}

Code MemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
  CUdeviceptr src = 0;
  StreamRef stream;
  if (Code code = Linear(srcArray, srcOffset, ByteCount, &src); code != Code::kOk) return code;
  if (ByteCount == 0) return Code::kOk;
  if (Code code = Stream(nullptr, &stream); code != Code::kOk) return code;
  return CopyDtoD(dstDevice, src, ByteCount, stream);
}

Code MemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount) {
  CUdeviceptr dst = 0;
  StreamRef stream;
  if (Code code = Linear(dstArray, dstOffset, ByteCount, &dst); code != Code::kOk) return code;
  if (ByteCount == 0) return Code::kOk;
  if (Code code = Stream(nullptr, &stream); code != Code::kOk) return code;
  return CopyDtoD(dst, srcDevice, ByteCount, stream);
}

Code MemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                   size_t ByteCount) {
  CUdeviceptr dst = 0, src = 0;
  StreamRef stream;
  if (Code code = Linear(dstArray, dstOffset, ByteCount, &dst); code != Code::kOk) return code;
  if (Code code = Linear(srcArray, srcOffset, ByteCount, &src); code != Code::kOk) return code;
  if (ByteCount == 0) return Code::kOk;
  if (Code code = Stream(nullptr, &stream); code != Code::kOk) return code;
  return CopyDtoD(dst, src, ByteCount, stream);
}

}  // namespace api
}  // namespace pvgpu::guest
