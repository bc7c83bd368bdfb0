// Texture sampling and surface addressing, as the CUDA programming guide's texture-fetching
// appendix and the PTX ISA describe them (docs/textures.md says how exact it is). Pure
// functions over a texture::TextureSpec: every element they read is first clamped into its
// resource's extents, and read through `read`, which the engine bounds-checks again against the
// context's memory. ops_texture.cc and ops_surface.cc call them per lane.
#pragma once

#include <cstdint>

#include "common/function_ref.h"
#include "common/texture.h"

namespace pvgpu::ptx::tex {

// `bytes` at device address `address`, or nullptr when that memory is not the context's.
using ReadFn = FunctionRef<const uint8_t*(uint64_t address, uint32_t bytes)>;

enum class LodMode : uint8_t { kBase, kLevel, kGrad };

// One lane's fetch, operands as the instruction gives them.
struct Fetch {
  texture::Geometry geometry = texture::Geometry::k2D;  // the instruction's
  bool int_coords = false;  // .s32 coordinates: element indices, no filtering
  float f[3] = {0, 0, 0};   // x, y, z (cube: the direction)
  int32_t i[3] = {0, 0, 0};
  uint32_t layer = 0;
  LodMode lod_mode = LodMode::kBase;
  float lod = 0;
  float dx[3] = {0, 0, 0}, dy[3] = {0, 0, 0};  // .grad
  int gather = -1;  // tld4: the component gathered (0 r, 1 g, 2 b, 3 a)
};

// The 9-bit fixed-point form (8 fractional bits) the hardware keeps filter weights in.
float QuantizeWeight(float fraction);

// Fills out[0..3] with the result's bits (floats, or integers for textures that read them);
// false when an element could not be read (its memory is gone): the caller faults.
bool Sample(const texture::TextureSpec& t, const Fetch& f, ReadFn read, uint32_t out[4]);

// txq: the value of `query` ("width", ...) at `level`; false for an unknown query.
bool Query(const texture::TextureSpec& t, const char* query, uint32_t level, uint32_t* value);

// Surfaces. The boundary mode of suld/sust/sured.
enum class Boundary : uint8_t { kTrap, kClamp, kZero };
enum class SurfaceResult : uint8_t { kOk, kSkip, kOutOfBounds, kMisaligned };

struct SurfaceAccess {
  texture::Geometry geometry = texture::Geometry::k2D;
  int32_t x = 0, y = 0, z = 0;  // x in bytes (.b) or elements (.p)
  uint32_t layer = 0;
  uint32_t bytes = 0;     // size of the access
  bool formatted = false; // .p: x counts elements, the access is one element
  Boundary boundary = Boundary::kTrap;
};
// The device address of the access. kSkip: out of bounds under .zero (a load gives zeros, a
// store does nothing); kOutOfBounds under .trap; kMisaligned when x is not a multiple of the
// access size.
SurfaceResult SurfaceAddress(const texture::TextureSpec& t, const SurfaceAccess& a,
                             uint64_t* address);

// sust.p: the element bytes for four 32-bit source values (.f32 for float and normalized
// formats, .u32/.s32 for integer ones), channels the format lacks dropped.
void PackElement(const texture::TextureSpec& t, const uint32_t src[4], uint8_t* element);
// suld.p / sured.p counterpart: an element as four 32-bit values.
void UnpackElement(const texture::TextureSpec& t, const uint8_t* element, uint32_t out[4]);

}  // namespace pvgpu::ptx::tex
