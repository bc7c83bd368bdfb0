#include "common/texture.h"

#include <string>

namespace pvgpu::texture {

FormatInfo Describe(uint32_t format) {
  switch (format) {
    case kU8: return {1, false, false, false, 0};
    case kU16: return {2, false, false, false, 0};
    case kU32: return {4, false, false, false, 0};
    case kS8: return {1, true, false, false, 0};
    case kS16: return {2, true, false, false, 0};
    case kS32: return {4, true, false, false, 0};
    case kHalf: return {2, true, true, false, 0};
    case kFloat: return {4, true, true, false, 0};
    case kUnorm8x1: return {1, false, false, true, 1};
    case kUnorm8x2: return {1, false, false, true, 2};
    case kUnorm8x4: return {1, false, false, true, 4};
    case kUnorm16x1: return {2, false, false, true, 1};
    case kUnorm16x2: return {2, false, false, true, 2};
    case kUnorm16x4: return {2, false, false, true, 4};
    case kSnorm8x1: return {1, true, false, true, 1};
    case kSnorm8x2: return {1, true, false, true, 2};
    case kSnorm8x4: return {1, true, false, true, 4};
    case kSnorm16x1: return {2, true, false, true, 1};
    case kSnorm16x2: return {2, true, false, true, 2};
    case kSnorm16x4: return {2, true, false, true, 4};
    default: return {};
  }
}

uint32_t ChannelFormat(uint32_t format) {
  const FormatInfo info = Describe(format);
  if (!info.always_norm) return format;
  if (info.bytes == 1) return info.is_signed ? kS8 : kU8;
  return info.is_signed ? kS16 : kU16;
}

Geometry GeometryOf(const ArrayShape& s) {
  const bool layered = (s.flags & kArrayLayered) != 0;
  if (s.flags & kArrayCubemap) return layered ? Geometry::kLayeredCube : Geometry::kCube;
  if (layered) return s.height == 0 ? Geometry::kLayered1D : Geometry::kLayered2D;
  if (s.height == 0) return Geometry::k1D;
  return s.depth == 0 ? Geometry::k2D : Geometry::k3D;
}

StatusOr<ArrayLayout> LayoutArray(const ArrayShape& s) {
  const FormatInfo info = Describe(s.format);
  if (info.bytes == 0) {
    return Error(Code::kNotSupported, "array format " + std::to_string(s.format));
  }
  if (s.channels != 1 && s.channels != 2 && s.channels != 4) {
    return Error(Code::kInvalidValue, "an array has 1, 2 or 4 channels");
  }
  if (info.fixed_channels != 0 && s.channels != info.fixed_channels) {
    return Error(Code::kInvalidValue, "the format fixes the channel count");
  }
  if ((s.flags & ~kArrayKnownFlags) != 0) {
    return Error(Code::kNotSupported, "array flags " + std::to_string(s.flags));
  }
  if (s.width == 0 || (s.height == 0 && s.depth != 0 && !(s.flags & kArrayLayered))) {
    return Error(Code::kInvalidValue, "array extents");
  }
  const Geometry g = GeometryOf(s);
  ArrayLayout layout;
  layout.shape = s;
  layout.element_bytes = info.bytes * s.channels;
  switch (g) {
    case Geometry::k1D:
      if (s.width > kMaxWidth1D) return Error(Code::kInvalidValue, "array too wide");
      break;
    case Geometry::k2D:
      if (s.width > kMaxWidth2D || s.height > kMaxHeight2D) {
        return Error(Code::kInvalidValue, "array too large");
      }
      break;
    case Geometry::k3D:
      if (s.width > kMaxExtent3D || s.height > kMaxExtent3D || s.depth > kMaxExtent3D) {
        return Error(Code::kInvalidValue, "array too large");
      }
      layout.slices = s.depth;
      break;
    case Geometry::kLayered1D:
    case Geometry::kLayered2D:
      if (s.depth == 0 || s.depth > kMaxLayers || s.width > kMaxExtent3D ||
          s.height > kMaxExtent3D) {
        return Error(Code::kInvalidValue, "layered array extents");
      }
      layout.slices = s.depth;
      break;
    case Geometry::kCube:
    case Geometry::kLayeredCube:
      if (s.width != s.height || s.width > kMaxExtent3D || s.depth == 0 || s.depth % 6 != 0 ||
          (g == Geometry::kCube && s.depth != 6) || s.depth > 6 * kMaxLayers) {
        return Error(Code::kInvalidValue, "a cubemap is square with 6 faces (per layer)");
      }
      layout.slices = s.depth;
      break;
  }
  uint64_t largest = s.width;
  if (s.height > largest) largest = s.height;
  if (g == Geometry::k3D && s.depth > largest) largest = s.depth;
  uint32_t max_levels = 1;
  while ((largest >> max_levels) != 0) ++max_levels;
  if (s.levels == 0 || s.levels > max_levels || s.levels > kMaxLevels) {
    return Error(Code::kInvalidValue, "mipmap level count");
  }
  uint64_t offset = 0;
  for (uint32_t l = 0; l < s.levels; ++l) {
    Level level;
    level.width = s.width >> l ? s.width >> l : 1;
    level.height = s.height == 0 ? 1 : (s.height >> l ? s.height >> l : 1);
    const uint64_t slices = g == Geometry::k3D ? (s.depth >> l ? s.depth >> l : 1) : layout.slices;
    level.depth = g == Geometry::k3D ? slices : 1;
    level.pitch = level.width * layout.element_bytes;
    level.slice = level.pitch * level.height;
    level.bytes = level.slice * slices;
    level.offset = offset;
    offset = (offset + level.bytes + 255) / 256 * 256;
    layout.levels.push_back(level);
  }
  layout.bytes = offset;
  return layout;
}

bool TextureSpec::ReadsIntegers() const {
  const FormatInfo info = Describe(format);
  if (info.is_float || info.always_norm) return false;
  if (info.bytes == 4) return true;
  return (flags & kReadAsInteger) != 0;
}

Status ValidateTexture(const TextureSpec& t) {
  const FormatInfo info = Describe(t.format);
  if (info.bytes == 0) return Error(Code::kNotSupported, "format " + std::to_string(t.format));
  if (t.channels != 1 && t.channels != 2 && t.channels != 4) {
    return Error(Code::kInvalidValue, "1, 2 or 4 channels");
  }
  if (info.fixed_channels != 0 && t.channels != info.fixed_channels) {
    return Error(Code::kInvalidValue, "the format fixes the channel count");
  }
  if (t.element_bytes != info.bytes * t.channels) return Error(Code::kInvalidValue, "element size");
  if (t.layers == 0 || t.layers > kMaxLayers) return Error(Code::kInvalidValue, "layers");
  if (t.levels.empty() || t.levels.size() > kMaxLevels) {
    return Error(Code::kInvalidValue, "level count");
  }
  for (const Level& l : t.levels) {
    if (l.width == 0 || l.height == 0 || l.depth == 0) return Error(Code::kInvalidValue, "extent");
    if (l.pitch < l.width * t.element_bytes) return Error(Code::kInvalidValue, "pitch");
    // Every element of the level lies inside its bytes.
    const bool cube_faces = t.geometry == Geometry::kCube || t.geometry == Geometry::kLayeredCube;
    const uint64_t slices =
        t.geometry == Geometry::k3D ? l.depth : (cube_faces ? 6 * t.layers : t.layers);
    if (l.slice < (l.height - 1) * l.pitch + l.width * t.element_bytes ||
        l.bytes < (slices - 1) * l.slice + (l.height - 1) * l.pitch + l.width * t.element_bytes) {
      return Error(Code::kInvalidValue, "the resource does not hold its extents");
    }
    if (l.offset + l.bytes < l.offset || t.base + l.offset + l.bytes < t.base) {
      return Error(Code::kInvalidValue, "resource range overflows");
    }
  }
  const bool layered = t.geometry == Geometry::kLayered1D || t.geometry == Geometry::kLayered2D ||
                       t.geometry == Geometry::kLayeredCube;
  const bool cube = t.geometry == Geometry::kCube || t.geometry == Geometry::kLayeredCube;
  if (t.layers == 0 || (!layered && !cube && t.layers != 1)) {
    return Error(Code::kInvalidValue, "layers");
  }
  if (t.linear && (t.levels.size() != 1 || t.geometry != Geometry::k1D)) {
    return Error(Code::kInvalidValue, "a linear resource is one 1D level");
  }
  if (t.surface) return Status::Ok();
  for (uint32_t mode : t.address) {
    if (mode > kBorder) return Error(Code::kInvalidValue, "address mode");
  }
  if (t.filter > kLinear || t.mip_filter > kLinear) return Error(Code::kInvalidValue, "filter");
  if ((t.flags & ~kKnownTextureFlags) != 0) {
    return Error(Code::kInvalidValue, "texture flags " + std::to_string(t.flags));
  }
  if ((t.filter == kLinear || t.mip_filter == kLinear) && t.ReadsIntegers()) {
    return Error(Code::kInvalidValue, "linear filtering needs a floating-point result");
  }
  if ((t.flags & kSrgb) && !(info.bytes == 1 && !info.is_signed && !t.ReadsIntegers())) {
    return Error(Code::kInvalidValue, "sRGB needs an 8-bit unsigned normalized format");
  }
  return Status::Ok();
}

}  // namespace pvgpu::texture
