// CUDA arrays, texture and surface objects as pvgpu lays them out: the facts the guest, the
// host, the adapters and the PTX engine share (docs/textures.md).
//
// An array is a block of its context's device memory that the host allocates and the guest
// never frees directly; its elements lie row after row, slice after slice (a layer or a cube
// face is a slice), and each level of a mipmapped array follows the previous one. Guest and host
// compute the same layout from the same descriptor (LayoutArray), so a copy to or from an array
// is a pitched copy at addresses both sides agree on.
//
// A texture or surface object is a TextureSpec: the resource as addresses and extents in device
// memory, and how it is sampled. The host builds it from the guest's descriptors, checks that it
// fits its resource (ValidateTexture), and hands it to the adapter under the guest's handle; a
// kernel names it by that 64-bit value.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace pvgpu::texture {

// CUarray_format values pvgpu supports (cuda.h's numbering).
enum Format : uint32_t {
  kU8 = 0x01,
  kU16 = 0x02,
  kU32 = 0x03,
  kS8 = 0x08,
  kS16 = 0x09,
  kS32 = 0x0a,
  kHalf = 0x10,
  kFloat = 0x20,
  kUnorm8x1 = 0xc0,
  kUnorm8x2 = 0xc1,
  kUnorm8x4 = 0xc2,
  kUnorm16x1 = 0xc3,
  kUnorm16x2 = 0xc4,
  kUnorm16x4 = 0xc5,
  kSnorm8x1 = 0xc6,
  kSnorm8x2 = 0xc7,
  kSnorm8x4 = 0xc8,
  kSnorm16x1 = 0xc9,
  kSnorm16x2 = 0xca,
  kSnorm16x4 = 0xcb,
};

// What one channel of a format is.
struct FormatInfo {
  uint32_t bytes = 0;         // per channel; 0: not a supported format
  bool is_signed = false;     // integer formats
  bool is_float = false;      // half and float
  bool always_norm = false;   // UNORM_/SNORM_ formats read as normalized floats only
  uint32_t fixed_channels = 0;  // UNORM_/SNORM_ formats fix the channel count (else 0)
};
FormatInfo Describe(uint32_t format);
// The format with its canonical integer type (kUnorm8x2 -> kU8) for decoding a channel.
uint32_t ChannelFormat(uint32_t format);

// CUDA_ARRAY3D_* flags pvgpu honours.
inline constexpr uint32_t kArrayLayered = 0x01;
inline constexpr uint32_t kArraySurfaceLdst = 0x02;
inline constexpr uint32_t kArrayCubemap = 0x04;
inline constexpr uint32_t kArrayTextureGather = 0x08;
inline constexpr uint32_t kArrayKnownFlags = 0x0f;

// An array's descriptor: cuArray3DCreate's (height 0: 1D; depth 0: not 3D; with kArrayLayered
// depth is the number of layers; with kArrayCubemap 6, or 6 per layer).
struct ArrayShape {
  uint32_t format = 0;
  uint32_t channels = 0;
  uint64_t width = 0, height = 0, depth = 0;
  uint32_t flags = 0;
  uint32_t levels = 1;  // mipmap levels (1: a plain array)
};

struct Level {
  uint64_t offset = 0;  // bytes from the array's first byte
  uint64_t width = 0, height = 0, depth = 0;  // in elements; height, depth at least 1
  uint64_t pitch = 0;   // bytes between rows
  uint64_t slice = 0;   // bytes between slices (depth, layers, faces)
  uint64_t bytes = 0;   // the level's size
};

struct ArrayLayout {
  ArrayShape shape;
  uint32_t element_bytes = 0;
  uint64_t slices = 1;  // depth of a 3D array, else layers (times 6 for cubemaps), else 1
  std::vector<Level> levels;
  uint64_t bytes = 0;
};

// The largest extents pvgpu accepts (those of a current NVIDIA GPU's device attributes).
inline constexpr uint64_t kMaxWidth1D = 1u << 17, kMaxWidth2D = 1u << 17, kMaxHeight2D = 1u << 16;
inline constexpr uint64_t kMaxExtent3D = 1u << 14, kMaxLayers = 2048;
inline constexpr uint32_t kMaxLevels = 18;

// Checks a descriptor (kInvalidValue for a bad one, kNotSupported for a format pvgpu lacks)
// and lays it out.
StatusOr<ArrayLayout> LayoutArray(const ArrayShape& shape);

// The geometry of a resource as the engine reads it.
enum class Geometry : uint32_t { k1D, k2D, k3D, kLayered1D, kLayered2D, kCube, kLayeredCube };

// cuda.h's CUaddress_mode, CUfilter_mode and CU_TRSF_* values.
enum AddressMode : uint32_t { kWrap = 0, kClamp = 1, kMirror = 2, kBorder = 3 };
enum FilterMode : uint32_t { kPoint = 0, kLinear = 1 };
inline constexpr uint32_t kReadAsInteger = 0x01;
inline constexpr uint32_t kNormalizedCoordinates = 0x02;
inline constexpr uint32_t kSrgb = 0x10;
inline constexpr uint32_t kDisableTrilinear = 0x20;
inline constexpr uint32_t kSeamlessCubemap = 0x40;
inline constexpr uint32_t kKnownTextureFlags = 0x73;

struct TextureSpec {
  bool surface = false;
  bool linear = false;  // a CU_RESOURCE_TYPE_LINEAR resource (tex1Dfetch's buffers)
  Geometry geometry = Geometry::k1D;
  uint32_t format = 0, channels = 0, element_bytes = 0;
  uint64_t base = 0;  // device address every Level::offset counts from
  std::vector<Level> levels;  // at least one
  uint64_t layers = 1;        // layered geometries: layers (cubemaps: faces / 6)
  // An array resource: the array's own descriptor, and which of its levels the object covers
  // (every level of a mipmapped array, or level `array_level` alone). An adapter that keeps
  // arrays of its own for the block at `base` (the cuda adapter's) makes them from these.
  bool array = false;
  ArrayShape array_shape;
  bool array_all_levels = false;
  uint32_t array_level = 0;
  // Sampling (texture objects).
  std::array<uint32_t, 3> address{kClamp, kClamp, kClamp};
  uint32_t filter = kPoint, mip_filter = kPoint;
  uint32_t flags = 0;  // kReadAsInteger, kNormalizedCoordinates, kSrgb, ...
  std::array<float, 4> border{};
  float mip_bias = 0, min_lod = 0, max_lod = 0;
  uint32_t max_anisotropy = 0;

  // Whether the texture returns its channels as integers (kReadAsInteger on an integer
  // format that is not always normalized, or any 32-bit integer format).
  bool ReadsIntegers() const;
};

// Refuses a texture or surface that does not fit its own resource or asks for what its format
// cannot give (kInvalidValue), or what pvgpu lacks (kNotSupported).
Status ValidateTexture(const TextureSpec& spec);

// The geometry of an array as a texture or surface sees it.
Geometry GeometryOf(const ArrayShape& shape);

// A context's texture and surface objects by their handles, as a launch sees them.
struct TextureTable {
  std::unordered_map<uint64_t, std::shared_ptr<const TextureSpec>> objects;
};

}  // namespace pvgpu::texture
