#include "ptx/texture_sample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "ptx/half.h"

namespace pvgpu::ptx::tex {

using texture::Geometry;
using texture::Level;
using texture::TextureSpec;

namespace {

// Four channels, as floats or as integers (the texture decides which).
struct Value {
  float f[4] = {0, 0, 0, 1};
  uint32_t u[4] = {0, 0, 0, 1};
};

float SrgbToLinear(float c) {
  return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

Value Decode(const TextureSpec& t, const uint8_t* p, bool integers) {
  Value v;
  const uint32_t format = texture::ChannelFormat(t.format);
  const uint32_t bytes = texture::Describe(t.format).bytes;
  for (uint32_t c = 0; c < t.channels && c < 4; ++c) {
    const uint8_t* q = p + c * bytes;
    int64_t raw = 0;
    float norm = 0;
    switch (format) {
      case texture::kU8:
        raw = q[0];
        norm = static_cast<float>(raw) / 255.0f;
        break;
      case texture::kS8:
        raw = static_cast<int8_t>(q[0]);
        norm = std::max(static_cast<float>(raw) / 127.0f, -1.0f);
        break;
      case texture::kU16: {
        uint16_t x;
        std::memcpy(&x, q, 2);
        raw = x;
        norm = static_cast<float>(raw) / 65535.0f;
        break;
      }
      case texture::kS16: {
        int16_t x;
        std::memcpy(&x, q, 2);
        raw = x;
        norm = std::max(static_cast<float>(raw) / 32767.0f, -1.0f);
        break;
      }
      case texture::kU32: {
        uint32_t x;
        std::memcpy(&x, q, 4);
        raw = x;
        break;
      }
      case texture::kS32: {
        int32_t x;
        std::memcpy(&x, q, 4);
        raw = x;
        break;
      }
      case texture::kHalf: {
        uint16_t x;
        std::memcpy(&x, q, 2);
        norm = HalfToFloat(x);
        break;
      }
      case texture::kFloat:
        std::memcpy(&norm, q, 4);
        break;
    }
    v.u[c] = static_cast<uint32_t>(raw);
    v.f[c] = norm;
  }
  if (!integers && (t.flags & texture::kSrgb)) {
    for (uint32_t c = 0; c < 3 && c < t.channels; ++c) v.f[c] = SrgbToLinear(v.f[c]);
  }
  return v;
}

Value Border(const TextureSpec& t) {
  Value v;
  for (int c = 0; c < 4; ++c) {
    v.f[c] = t.border[c];
    v.u[c] = static_cast<uint32_t>(static_cast<int32_t>(t.border[c]));
  }
  return v;
}

// A texel index under an address mode: in [0, n), or -1 for the border.
int64_t MapIndex(int64_t i, uint64_t n_unsigned, uint32_t mode, bool normalized) {
  const int64_t n = static_cast<int64_t>(n_unsigned);
  // Wrap and mirror exist for normalized coordinates only; otherwise they clamp, as CUDA's
  // runtime documents.
  if (!normalized && (mode == texture::kWrap || mode == texture::kMirror)) mode = texture::kClamp;
  switch (mode) {
    case texture::kWrap:
      return ((i % n) + n) % n;
    case texture::kMirror: {
      const int64_t m = ((i % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case texture::kBorder:
      return i < 0 || i >= n ? -1 : i;
    default:
      return std::clamp<int64_t>(i, 0, n - 1);
  }
}

// floor() into a range where the integer arithmetic above cannot overflow; NaN becomes 0.
int64_t Floor(float x) {
  if (!(x == x)) return 0;
  const float limit = 1099511627776.0f;  // 2^40
  return static_cast<int64_t>(std::floor(std::clamp(x, -limit, limit)));
}

class Sampler {
 public:
  Sampler(const TextureSpec& t, ReadFn read)
      : t_(t), read_(read), integers_(t.ReadsIntegers()),
        normalized_((t.flags & texture::kNormalizedCoordinates) != 0) {}

  bool ok() const { return ok_; }

  // The element at (i, j, k) of `level` (indices before addressing; k is the depth index of a
  // 3D texture), in slice `slice` for layered ones. `forced` replaces the sampler's modes
  // (cubemap faces clamp).
  Value Texel(const Level& level, int64_t i, int64_t j, int64_t k, uint64_t slice,
              bool forced_clamp, bool normalized) {
    const uint32_t m0 = forced_clamp ? texture::kClamp : t_.address[0];
    const uint32_t m1 = forced_clamp ? texture::kClamp : t_.address[1];
    const uint32_t m2 = forced_clamp ? texture::kClamp : t_.address[2];
    const int64_t x = MapIndex(i, level.width, m0, normalized);
    const int64_t y = MapIndex(j, level.height, m1, normalized);
    const int64_t z = MapIndex(k, level.depth, m2, normalized);
    if (x < 0 || y < 0 || z < 0) return Border(t_);
    const uint64_t s = t_.geometry == Geometry::k3D ? static_cast<uint64_t>(z) : slice;
    const uint64_t address = t_.base + level.offset + s * level.slice +
                             static_cast<uint64_t>(y) * level.pitch +
                             static_cast<uint64_t>(x) * t_.element_bytes;
    const uint8_t* p = read_(address, t_.element_bytes);
    if (p == nullptr) {
      ok_ = false;
      return Value{};
    }
    return Decode(t_, p, integers_);
  }

  // One level, point or linear, at texel-space coordinates u, v, w (dims: how many count).
  Value Filter(const Level& level, int dims, float u, float v, float w, uint64_t slice,
               bool forced_clamp, bool normalized, bool linear) {
    if (!linear) {
      return Texel(level, Floor(u), dims > 1 ? Floor(v) : 0, dims > 2 ? Floor(w) : 0, slice,
                   forced_clamp, normalized);
    }
    const float ub = u - 0.5f, vb = v - 0.5f, wb = w - 0.5f;
    const int64_t i = Floor(ub), j = dims > 1 ? Floor(vb) : 0, k = dims > 2 ? Floor(wb) : 0;
    const float a = QuantizeWeight(ub - std::floor(ub));
    const float b = dims > 1 ? QuantizeWeight(vb - std::floor(vb)) : 0;
    const float g = dims > 2 ? QuantizeWeight(wb - std::floor(wb)) : 0;
    Value out;
    for (int c = 0; c < 4; ++c) out.f[c] = 0;
    for (int dk = 0; dk < (dims > 2 ? 2 : 1); ++dk) {
      for (int dj = 0; dj < (dims > 1 ? 2 : 1); ++dj) {
        for (int di = 0; di < 2; ++di) {
          const float weight = (di ? a : 1 - a) * (dims > 1 ? (dj ? b : 1 - b) : 1) *
                               (dims > 2 ? (dk ? g : 1 - g) : 1);
          const Value texel = Texel(level, i + di, j + dj, k + dk, slice, forced_clamp, normalized);
          for (int c = 0; c < 4; ++c) out.f[c] += weight * texel.f[c];
        }
      }
    }
    return out;
  }

 private:
  const TextureSpec& t_;
  ReadFn read_;
  bool ok_ = true;

 public:
  const bool integers_;
  const bool normalized_;
};

// The cubemap face a direction points at, and its normalized face coordinates (the CUDA
// programming guide's cubemap table).
void CubeFace(const float d[3], uint32_t* face, float* s, float* t) {
  const float ax = std::fabs(d[0]), ay = std::fabs(d[1]), az = std::fabs(d[2]);
  float sc, tc, m;
  if (ax >= ay && ax >= az) {
    m = ax;
    *face = d[0] >= 0 ? 0 : 1;
    sc = d[0] >= 0 ? -d[2] : d[2];
    tc = -d[1];
  } else if (ay >= az) {
    m = ay;
    *face = d[1] >= 0 ? 2 : 3;
    sc = d[0];
    tc = d[1] >= 0 ? d[2] : -d[2];
  } else {
    m = az;
    *face = d[2] >= 0 ? 4 : 5;
    sc = d[2] >= 0 ? d[0] : -d[0];
    tc = -d[1];
  }
  if (m == 0) m = 1;
  *s = (sc / m + 1) * 0.5f;
  *t = (tc / m + 1) * 0.5f;
}

int Dims(Geometry g) {
  switch (g) {
    case Geometry::k1D:
    case Geometry::kLayered1D:
      return 1;
    case Geometry::k3D:
      return 3;
    default:
      return 2;
  }
}

bool IsCube(Geometry g) { return g == Geometry::kCube || g == Geometry::kLayeredCube; }

// The level of detail a fetch asks for, before clamping to the levels there are.
float Lod(const TextureSpec& t, const Fetch& f, int dims, bool normalized) {
  float lod = 0;
  if (f.lod_mode == LodMode::kLevel) lod = f.lod;
  if (f.lod_mode == LodMode::kGrad) {
    const Level& base = t.levels[0];
    const float size[3] = {static_cast<float>(base.width), static_cast<float>(base.height),
                           static_cast<float>(base.depth)};
    float lx = 0, ly = 0;
    for (int d = 0; d < dims; ++d) {
      const float scale = normalized || IsCube(t.geometry) ? size[d] : 1.0f;
      lx += (f.dx[d] * scale) * (f.dx[d] * scale);
      ly += (f.dy[d] * scale) * (f.dy[d] * scale);
    }
    const float rho = std::sqrt(std::max(lx, ly));
    lod = rho > 0 ? std::log2(rho) : -1000.0f;
  }
  lod += t.mip_bias;
  lod = std::max(lod, t.min_lod);
  lod = std::min(lod, t.max_lod);
  return lod;
}

}  // namespace

float QuantizeWeight(float fraction) {
  return std::nearbyint(std::clamp(fraction, 0.0f, 1.0f) * 256.0f) / 256.0f;
}

bool Sample(const TextureSpec& t, const Fetch& f, ReadFn read, uint32_t out[4]) {
  Sampler s(t, read);
  const int dims = Dims(f.geometry);
  const bool cube = IsCube(f.geometry);
  const bool layered = f.geometry == Geometry::kLayered1D ||
                       f.geometry == Geometry::kLayered2D ||
                       f.geometry == Geometry::kLayeredCube;
  uint64_t slice = 0;
  float coord[3] = {f.f[0], f.f[1], f.f[2]};
  bool normalized = s.normalized_;
  if (layered) slice = std::min<uint64_t>(f.layer, t.layers - 1);
  if (cube) {
    uint32_t face = 0;
    CubeFace(f.f, &face, &coord[0], &coord[1]);
    slice = slice * 6 + face;
    normalized = true;
  }
  Value v;
  if (f.int_coords) {
    // Element indices: no filtering, no scaling; a linear buffer reads zeros outside.
    const Level& level = t.levels[0];
    if (t.linear && (f.i[0] < 0 || static_cast<uint64_t>(f.i[0]) >= level.width)) {
      v = Value{};
      for (int c = 0; c < 4; ++c) v.f[c] = 0, v.u[c] = 0;
    } else {
      v = s.Texel(level, f.i[0], dims > 1 ? f.i[1] : 0, dims > 2 ? f.i[2] : 0, slice, false,
                  false);
    }
  } else {
    const float lod = t.levels.size() > 1 ? Lod(t, f, dims, normalized) : 0;
    const float top = static_cast<float>(t.levels.size() - 1);
    auto at_level = [&](size_t l) {
      const Level& level = t.levels[l];
      const float scale[3] = {static_cast<float>(level.width), static_cast<float>(level.height),
                              static_cast<float>(level.depth)};
      float u[3];
      for (int d = 0; d < 3; ++d) u[d] = normalized ? coord[d] * scale[d] : coord[d];
      if (f.gather >= 0) return Value{};
      return s.Filter(level, dims, u[0], u[1], u[2], slice, cube, normalized,
                      t.filter == texture::kLinear && !s.integers_);
    };
    if (f.gather >= 0) {
      // tld4: the gathered component of the four texels bilinear filtering would use, from
      // the lower left, counter-clockwise: (i, j+1), (i+1, j+1), (i+1, j), (i, j).
      const Level& level = t.levels[0];
      const float u = (normalized ? coord[0] * level.width : coord[0]) - 0.5f;
      const float w = (normalized ? coord[1] * level.height : coord[1]) - 0.5f;
      const int64_t i = Floor(u), j = Floor(w);
      const int64_t di[4] = {0, 1, 1, 0}, dj[4] = {1, 1, 0, 0};
      for (int k = 0; k < 4; ++k) {
        const Value texel = s.Texel(level, i + di[k], j + dj[k], 0, slice, cube, normalized);
        std::memcpy(&out[k], s.integers_ ? static_cast<const void*>(&texel.u[f.gather])
                                         : static_cast<const void*>(&texel.f[f.gather]),
                    4);
      }
      return s.ok();
    }
    if (t.levels.size() == 1) {
      v = at_level(0);
    } else {
      const float clamped = std::clamp(lod, 0.0f, top);
      if (t.mip_filter == texture::kLinear && !s.integers_) {
        const size_t l0 = static_cast<size_t>(std::floor(clamped));
        const size_t l1 = std::min(l0 + 1, t.levels.size() - 1);
        const float frac = QuantizeWeight(clamped - std::floor(clamped));
        const Value a = at_level(l0), b = at_level(l1);
        for (int c = 0; c < 4; ++c) v.f[c] = (1 - frac) * a.f[c] + frac * b.f[c];
      } else {
        v = at_level(static_cast<size_t>(std::floor(clamped + 0.5f)));
      }
    }
  }
  for (int c = 0; c < 4; ++c) {
    if (s.integers_) {
      out[c] = v.u[c];
    } else {
      std::memcpy(&out[c], &v.f[c], 4);
    }
  }
  return s.ok();
}

bool Query(const TextureSpec& t, const char* q, uint32_t level, uint32_t* value) {
  const std::string_view query(q);
  const Level& l = t.levels[std::min<size_t>(level, t.levels.size() - 1)];
  if (query == "width") {
    *value = static_cast<uint32_t>(l.width);
  } else if (query == "height") {
    *value = static_cast<uint32_t>(l.height);
  } else if (query == "depth") {
    *value = static_cast<uint32_t>(l.depth);
  } else if (query == "array_size") {
    *value = static_cast<uint32_t>(t.layers);
  } else if (query == "num_mipmap_levels") {
    *value = static_cast<uint32_t>(t.levels.size());
  } else if (query == "normalized_coords") {
    *value = (t.flags & texture::kNormalizedCoordinates) ? 1 : 0;
  } else {
    return false;
  }
  return true;
}

SurfaceResult SurfaceAddress(const TextureSpec& t, const SurfaceAccess& a, uint64_t* address) {
  const Level& level = t.levels[0];
  const int dims = Dims(a.geometry);
  const uint64_t eb = t.element_bytes;
  const int64_t row = static_cast<int64_t>(level.width * eb);
  int64_t x = a.formatted ? static_cast<int64_t>(a.x) * static_cast<int64_t>(eb) : a.x;
  int64_t y = dims > 1 ? a.y : 0;
  int64_t z = dims > 2 ? a.z : 0;
  const uint32_t bytes = a.formatted ? static_cast<uint32_t>(eb) : a.bytes;
  if (!a.formatted && x % bytes != 0) return SurfaceResult::kMisaligned;
  const bool layered = a.geometry == Geometry::kLayered1D || a.geometry == Geometry::kLayered2D;
  int64_t layer = layered ? a.layer : 0;
  const int64_t slices = t.geometry == Geometry::k3D ? static_cast<int64_t>(level.depth)
                         : IsCube(t.geometry) ? static_cast<int64_t>(t.layers * 6)
                                              : static_cast<int64_t>(t.layers);
  const bool inside = x >= 0 && x + bytes <= row && y >= 0 &&
                      y < static_cast<int64_t>(level.height) && z >= 0 &&
                      (t.geometry == Geometry::k3D ? z < slices : z == 0) && layer >= 0 &&
                      layer < slices;
  if (!inside) {
    if (a.boundary == Boundary::kTrap) return SurfaceResult::kOutOfBounds;
    if (a.boundary == Boundary::kZero) return SurfaceResult::kSkip;
    if (row < bytes) return SurfaceResult::kSkip;  // no element holds the access
    x = std::clamp<int64_t>(x, 0, (row - bytes) / bytes * bytes);
    y = std::clamp<int64_t>(y, 0, static_cast<int64_t>(level.height) - 1);
    z = t.geometry == Geometry::k3D ? std::clamp<int64_t>(z, 0, slices - 1) : 0;
    layer = std::clamp<int64_t>(layer, 0, slices - 1);
  }
  const uint64_t s = t.geometry == Geometry::k3D ? static_cast<uint64_t>(z)
                                                 : static_cast<uint64_t>(layer);
  *address = t.base + level.offset + s * level.slice + static_cast<uint64_t>(y) * level.pitch +
             static_cast<uint64_t>(x);
  return SurfaceResult::kOk;
}

void PackElement(const TextureSpec& t, const uint32_t src[4], uint8_t* element) {
  const texture::FormatInfo info = texture::Describe(t.format);
  const uint32_t format = texture::ChannelFormat(t.format);
  for (uint32_t c = 0; c < t.channels; ++c) {
    uint8_t* q = element + c * info.bytes;
    float f;
    std::memcpy(&f, &src[c], 4);
    const int32_t s = static_cast<int32_t>(src[c]);
    switch (format) {
      case texture::kU8:
        q[0] = info.always_norm
                   ? static_cast<uint8_t>(std::nearbyint(std::clamp(f, 0.0f, 1.0f) * 255.0f))
                   : static_cast<uint8_t>(std::min<uint32_t>(src[c], 255));
        break;
      case texture::kS8:
        q[0] = static_cast<uint8_t>(
            info.always_norm
                ? static_cast<int8_t>(std::nearbyint(std::clamp(f, -1.0f, 1.0f) * 127.0f))
                : static_cast<int8_t>(std::clamp(s, -128, 127)));
        break;
      case texture::kU16: {
        const uint16_t v =
            info.always_norm
                ? static_cast<uint16_t>(std::nearbyint(std::clamp(f, 0.0f, 1.0f) * 65535.0f))
                : static_cast<uint16_t>(std::min<uint32_t>(src[c], 65535));
        std::memcpy(q, &v, 2);
        break;
      }
      case texture::kS16: {
        const int16_t v =
            info.always_norm
                ? static_cast<int16_t>(std::nearbyint(std::clamp(f, -1.0f, 1.0f) * 32767.0f))
                : static_cast<int16_t>(std::clamp(s, -32768, 32767));
        std::memcpy(q, &v, 2);
        break;
      }
      case texture::kHalf: {
        const uint16_t h = FloatToHalf(f);
        std::memcpy(q, &h, 2);
        break;
      }
      default:  // 32-bit integers and floats: the bits as they are
        std::memcpy(q, &src[c], 4);
        break;
    }
  }
}

void UnpackElement(const TextureSpec& t, const uint8_t* element, uint32_t out[4]) {
  const Value v = Decode(t, element, t.ReadsIntegers());
  for (int c = 0; c < 4; ++c) {
    if (t.ReadsIntegers()) {
      out[c] = v.u[c];
    } else {
      std::memcpy(&out[c], &v.f[c], 4);
    }
  }
}

}  // namespace pvgpu::ptx::tex
