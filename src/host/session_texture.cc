// Session handlers: CUDA arrays, texture and surface objects (docs/textures.md).
//
// An array is device memory of its context that the host lays out (texture::LayoutArray) and
// the guest copies to and from at the address the reply gives; it is an allocation of the
// context that cuMemFree cannot free. A texture or surface object is checked here against the
// memory it reads (its array, or an allocation of the context) before the adapter gets it, and
// the adapter resolves its handle when a kernel names it.
#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

Outcome Session::Execute(const ArrayCreateRequest& request, Span, ContextState& ctx) {
  texture::ArrayShape shape;
  shape.format = request.format;
  shape.channels = request.channels;
  shape.width = request.width;
  shape.height = request.height;
  shape.depth = request.depth;
  shape.flags = request.flags;
  shape.levels = request.levels;
  StatusOr<texture::ArrayLayout> layout = texture::LayoutArray(shape);
  if (!layout.ok()) {
    PVGPU_DEBUG("session " << id_ << ": array refused: " << layout.status().message());
    return layout.status().code();
  }
  const uint64_t bytes = layout->bytes;
  const adapters::Adapter& adapter = *policy_.adapters[ctx.device];
  const uint64_t total = adapter.info().total_memory;
  if (bytes > total || adapter.used_bytes() > total - bytes || !WithinQuota(bytes) ||
      ctx.arrays.budget().full()) {
    return Code::kOutOfMemory;
  }
  auto base = ctx.impl->Allocate(bytes);
  if (!base.ok()) return base.status().code();
  auto array = std::make_shared<ArrayState>(*ctx.impl, *base, std::move(*layout));
  if (!ctx.AddAllocation(*base, bytes, true)) return Code::kOutOfMemory;  // `array` frees it
  if (ctx.arrays.Add(request.array, std::move(array)) == nullptr) {
    ctx.EraseAllocation(*base);
    return Code::kOutOfMemory;
  }
  ArrayCreateReply reply;
  reply.result = 0;
  reply.dptr = *base;
  SendReply(reply);
  return Code::kOk;
}

Outcome Session::Execute(const ArrayDestroyRequest& request, Span, ContextState& ctx,
                         std::shared_ptr<ArrayState>& array) {
  // The guest may no longer name its memory; the memory itself stays while a texture or
  // surface object over the array does.
  ctx.EraseAllocation(array->base);
  ctx.arrays.Erase(request.array);
  return Code::kOk;
}

namespace {

// The resource of a texture or surface object over an array: `level` alone, or every level.
Status ArrayResource(const ArrayState& array, bool all_levels, uint32_t level,
                     texture::TextureSpec* spec) {
  const texture::ArrayLayout& layout = array.layout;
  if (!all_levels && level >= layout.levels.size()) {
    return Error(Code::kInvalidValue, "no such level");
  }
  spec->geometry = texture::GeometryOf(layout.shape);
  spec->format = layout.shape.format;
  spec->channels = layout.shape.channels;
  spec->element_bytes = layout.element_bytes;
  spec->base = array.base;
  spec->array = true;
  spec->array_shape = layout.shape;
  spec->array_all_levels = all_levels;
  spec->array_level = all_levels ? 0 : level;
  if (all_levels) {
    spec->levels = layout.levels;
  } else {
    spec->levels = {layout.levels[level]};
  }
  switch (spec->geometry) {
    case texture::Geometry::kLayered1D:
    case texture::Geometry::kLayered2D:
      spec->layers = layout.shape.depth;
      break;
    case texture::Geometry::kCube:
    case texture::Geometry::kLayeredCube:
      spec->layers = layout.shape.depth / 6;
      break;
    default:
      spec->layers = 1;
  }
  if (spec->surface && !(layout.shape.flags & texture::kArraySurfaceLdst)) {
    return Error(Code::kInvalidValue, "a surface needs an array made with SURFACE_LDST");
  }
  return Status::Ok();
}

// The resource over device memory: `width` elements (linear) or `height` rows of them, rows
// `pitch` bytes apart (pitch-2D), inside one allocation of the context.
Status MemoryResource(const ContextState& ctx, const TexObjectCreateRequest& r,
                      texture::TextureSpec* spec) {
  const texture::FormatInfo info = texture::Describe(r.format);
  if (info.bytes == 0) return Error(Code::kNotSupported, "format");
  if (spec->surface) return Error(Code::kInvalidValue, "a surface is over an array");
  const bool linear = r.resource_type == 2;
  spec->linear = linear;
  spec->geometry = linear ? texture::Geometry::k1D : texture::Geometry::k2D;
  spec->format = r.format;
  spec->channels = r.channels;
  spec->element_bytes = info.bytes * r.channels;
  spec->base = r.dptr;
  texture::Level level;
  level.width = r.width;
  level.height = linear ? 1 : r.height;
  level.depth = 1;
  // Extents bounded first, so that the products below cannot overflow.
  if (r.width == 0 || level.height == 0 || r.width > (uint64_t{1} << 32) ||
      level.height > texture::kMaxHeight2D || (r.channels != 1 && r.channels != 2 &&
                                               r.channels != 4)) {
    return Error(Code::kInvalidValue, "resource extents");
  }
  const uint64_t row = r.width * spec->element_bytes;
  level.pitch = linear ? row : r.pitch;
  if (level.pitch < row || level.pitch > (uint64_t{1} << 40)) {
    return Error(Code::kInvalidValue, "pitch");
  }
  level.slice = level.pitch * level.height;
  level.bytes = (level.height - 1) * level.pitch + row;
  if (r.dptr % spec->element_bytes != 0 || !ctx.InAllocation(r.dptr, level.bytes)) {
    return Error(Code::kInvalidValue, "the resource is not device memory of the context");
  }
  spec->levels = {level};
  return Status::Ok();
}

}  // namespace

Outcome Session::Execute(const TexObjectCreateRequest& request, Span, ContextState& ctx,
                         std::shared_ptr<ArrayState>* array) {
  if (request.surface > 1 || request.resource_type > 3) return Code::kInvalidValue;
  if (ctx.textures.budget().full()) return Code::kOutOfMemory;
  texture::TextureSpec spec;
  spec.surface = request.surface == 1;
  Status status = Status::Ok();
  if (request.resource_type <= 1) {
    if (array == nullptr) return Code::kInvalidValue;
    if (spec.surface && request.resource_type == 1) return Code::kInvalidValue;
    status = ArrayResource(**array, request.resource_type == 1, request.array_level, &spec);
  } else {
    if (array != nullptr) return Code::kInvalidValue;
    status = MemoryResource(ctx, request, &spec);
  }
  for (int i = 0; i < 3; ++i) spec.address[i] = request.address[i];
  spec.filter = request.filter;
  spec.mip_filter = request.mip_filter;
  spec.flags = request.flags;
  spec.max_anisotropy = request.max_anisotropy;
  for (int i = 0; i < 4; ++i) spec.border[i] = request.border[i];
  spec.mip_bias = request.mip_bias;
  spec.min_lod = request.min_lod;
  spec.max_lod = request.max_lod;
  if (status.ok()) status = texture::ValidateTexture(spec);
  if (!status.ok()) {
    PVGPU_DEBUG("session " << id_ << ": texture object refused: " << status.message());
    return status.code();
  }
  StatusOr<uint64_t> value = ctx.impl->CreateTexture(request.texture, spec);
  if (!value.ok()) {
    PVGPU_DEBUG("session " << id_ << ": texture object refused by the adapter: "
                           << value.status().message());
    return value.status().code();
  }
  TextureObject object;
  if (array != nullptr) object.array = *array;
  if (ctx.textures.Add(request.texture, std::move(object)) == nullptr) {
    ctx.impl->DestroyTexture(request.texture);
    return Code::kOutOfMemory;
  }
  TexObjectCreateReply reply;
  reply.result = 0;
  reply.value = *value;
  SendReply(reply);
  return Code::kOk;
}

Outcome Session::Execute(const TexObjectDestroyRequest& request, Span, ContextState& ctx,
                         TextureObject&) {
  ctx.impl->DestroyTexture(request.texture);
  ctx.textures.Erase(request.texture);
  return Code::kOk;
}

}  // namespace pvgpu::host
