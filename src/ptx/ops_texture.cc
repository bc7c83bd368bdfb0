// Texture and surface instructions in the unified mode: tex, tld4, txq (textures) and suld,
// sust, sured, suq (surfaces), whose first operand is a 64-bit register holding a texture or
// surface object's handle (a CUtexObject / CUsurfObject kernel parameter). Each lane's handle
// is looked up in the launch's table of the context's objects: a handle it lacks, or a texture
// used as a surface, faults. Sampling and surface addressing are texture_sample.cc's; every
// element is read through the context's bounds-checked address space.
//
// The independent mode (.texref/.samplerref/.surfref module variables: the legacy texture and
// surface references) is not supported: such an instruction is a load-time error.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

#include "common/texture.h"
#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/memory.h"
#include "ptx/texture_sample.h"

namespace pvgpu::ptx {

namespace {

using texture::Geometry;

enum class Kind : uint8_t { kTex, kTld4, kTxq, kSuld, kSust, kSured, kSuq };

const TexOperands& Ops(const Inst& in, Warp& w) { return w.launch->image->tex[in.aux]; }

// The object lane `lane` names, or nullptr after faulting the warp.
const texture::TextureSpec* Object(const Inst& in, Warp& w, int lane, uint32_t reg,
                                   bool surface) {
  const uint64_t handle = LoadReg<uint64_t>(w.regs, reg, lane);
  const texture::TextureTable* table = w.launch->env.textures;
  const texture::TextureSpec* spec = nullptr;
  if (table != nullptr) {
    auto it = table->objects.find(handle);
    if (it != table->objects.end()) spec = it->second.get();
  }
  if (spec == nullptr || spec->surface != surface) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s handle 0x%" PRIx64 " names no %s object of this context",
                  surface ? "surface" : "texture", handle, surface ? "surface" : "texture");
    w.Fault(Code::kIllegalAddress, in, lane, buf);
    return nullptr;
  }
  return spec;
}

float F(Warp& w, uint32_t reg, int lane) {
  const uint32_t bits = LoadReg<uint32_t>(w.regs, reg, lane);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int32_t I(Warp& w, uint32_t reg, int lane) {
  return static_cast<int32_t>(LoadReg<uint32_t>(w.regs, reg, lane));
}

bool IsLayered(Geometry g) {
  return g == Geometry::kLayered1D || g == Geometry::kLayered2D || g == Geometry::kLayeredCube;
}

int CoordDims(Geometry g) {
  switch (g) {
    case Geometry::k1D:
    case Geometry::kLayered1D:
      return 1;
    case Geometry::k2D:
    case Geometry::kLayered2D:
      return 2;
    default:
      return 3;
  }
}

bool ExecTex(const Inst& in, Warp& w, uint32_t m) {
  const TexOperands& o = Ops(in, w);
  const Geometry g = static_cast<Geometry>(o.geometry);
  const int dims = CoordDims(g);
  const int first = IsLayered(g) ? 1 : 0;  // the layer comes first
  for (uint32_t mm = m; mm;) {
    const int i = __builtin_ctz(mm);
    mm &= mm - 1;
    const texture::TextureSpec* t = Object(in, w, i, o.handle, false);
    if (t == nullptr) return true;
    tex::Fetch f;
    f.geometry = g;
    f.int_coords = o.int_coords != 0;
    if (first) f.layer = LoadReg<uint32_t>(w.regs, o.coord[0], i);
    for (int d = 0; d < dims; ++d) {
      if (f.int_coords) {
        f.i[d] = I(w, o.coord[first + d], i);
      } else {
        f.f[d] = F(w, o.coord[first + d], i);
      }
    }
    f.lod_mode = static_cast<tex::LodMode>(o.lod_mode);
    if (o.lod != kNoReg) f.lod = F(w, o.lod, i);
    for (int d = 0; d < 3; ++d) {
      if (o.dx[d] != kNoReg) f.dx[d] = F(w, o.dx[d], i);
      if (o.dy[d] != kNoReg) f.dy[d] = F(w, o.dy[d], i);
    }
    f.gather = o.gather;
    uint32_t out[4];
    auto read = [&](uint64_t address, uint32_t bytes) -> const uint8_t* {
      return GlobalPtr(w, address, bytes);
    };
    if (!tex::Sample(*t, f, read, out)) {
      w.Fault(Code::kIllegalAddress, in, i, "texture memory is no longer device memory");
      return true;
    }
    for (int k = 0; k < 4; ++k) {
      if (o.dst[k] != kNoReg) StoreReg<uint32_t>(w.regs, o.dst[k], i, out[k]);
    }
  }
  return false;
}

bool ExecQuery(const Inst& in, Warp& w, uint32_t m) {
  const TexOperands& o = Ops(in, w);
  const bool surface = in.flags != 0;
  for (uint32_t mm = m; mm;) {
    const int i = __builtin_ctz(mm);
    mm &= mm - 1;
    const texture::TextureSpec* t = Object(in, w, i, o.handle, surface);
    if (t == nullptr) return true;
    const uint32_t level = o.lod != kNoReg ? LoadReg<uint32_t>(w.regs, o.lod, i) : 0;
    uint32_t value = 0;
    (void)tex::Query(*t, o.query, level, &value);  // the query was checked at load time
    StoreReg<uint32_t>(w.regs, o.dst[0], i, value);
  }
  return false;
}

// Surface address for lane i, or false after faulting; *skip for an ignored access (.zero).
bool SurfaceLane(const Inst& in, Warp& w, int i, const TexOperands& o,
                 const texture::TextureSpec** spec, uint64_t* address, bool* skip) {
  const texture::TextureSpec* t = Object(in, w, i, o.handle, true);
  if (t == nullptr) return false;
  const Geometry g = static_cast<Geometry>(o.geometry);
  tex::SurfaceAccess a;
  a.geometry = g;
  const int first = IsLayered(g) ? 1 : 0;
  if (first) a.layer = LoadReg<uint32_t>(w.regs, o.coord[0], i);
  const int dims = CoordDims(g);
  a.x = I(w, o.coord[first], i);
  if (dims > 1) a.y = I(w, o.coord[first + 1], i);
  if (dims > 2) a.z = I(w, o.coord[first + 2], i);
  a.bytes = static_cast<uint32_t>(o.bytes) * o.vec;
  a.formatted = o.formatted != 0;
  a.boundary = static_cast<tex::Boundary>(o.boundary);
  *skip = false;
  switch (tex::SurfaceAddress(*t, a, address)) {
    case tex::SurfaceResult::kOk:
      break;
    case tex::SurfaceResult::kSkip:
      *skip = true;
      break;
    case tex::SurfaceResult::kOutOfBounds: {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "surface access out of bounds at (%d, %d, %d) layer %u",
                    a.x, a.y, a.z, a.layer);
      w.Fault(Code::kIllegalAddress, in, i, buf);
      return false;
    }
    case tex::SurfaceResult::kMisaligned:
      w.Fault(Code::kMisalignedAddress, in, i, "misaligned surface access");
      return false;
  }
  *spec = t;
  return true;
}

bool ExecSuld(const Inst& in, Warp& w, uint32_t m) {
  const TexOperands& o = Ops(in, w);
  for (uint32_t mm = m; mm;) {
    const int i = __builtin_ctz(mm);
    mm &= mm - 1;
    const texture::TextureSpec* t = nullptr;
    uint64_t address = 0;
    bool skip = false;
    if (!SurfaceLane(in, w, i, o, &t, &address, &skip)) return true;
    const uint32_t total = o.formatted ? t->element_bytes : o.bytes * o.vec;
    uint8_t data[32] = {};
    if (!skip) {
      const uint8_t* p = GlobalPtr(w, address, total);
      if (p == nullptr) {
        AddressFault(w, in, i, address, total, MemSpace::kGlobal, false);
        return true;
      }
      std::memcpy(data, p, total);
    }
    if (o.formatted) {
      uint32_t out[4] = {};
      if (!skip) tex::UnpackElement(*t, data, out);
      for (int k = 0; k < o.vec; ++k) StoreReg<uint32_t>(w.regs, o.dst[k], i, out[k]);
      continue;
    }
    for (int k = 0; k < o.vec; ++k) {
      uint64_t v = 0;
      std::memcpy(&v, data + k * o.bytes, o.bytes);
      if (o.dst64) {
        StoreReg<uint64_t>(w.regs, o.dst[k], i, v);
      } else {
        StoreReg<uint32_t>(w.regs, o.dst[k], i, static_cast<uint32_t>(v));
      }
    }
  }
  return false;
}

bool ExecSust(const Inst& in, Warp& w, uint32_t m) {
  const TexOperands& o = Ops(in, w);
  for (uint32_t mm = m; mm;) {
    const int i = __builtin_ctz(mm);
    mm &= mm - 1;
    const texture::TextureSpec* t = nullptr;
    uint64_t address = 0;
    bool skip = false;
    if (!SurfaceLane(in, w, i, o, &t, &address, &skip)) return true;
    if (skip) continue;
    const uint32_t total = o.formatted ? t->element_bytes : o.bytes * o.vec;
    uint8_t data[32] = {};
    if (o.formatted) {
      uint32_t src[4] = {0, 0, 0, 0};
      for (int k = 0; k < o.vec; ++k) src[k] = LoadReg<uint32_t>(w.regs, o.src[k], i);
      tex::PackElement(*t, src, data);
    } else {
      for (int k = 0; k < o.vec; ++k) {
        const uint64_t v = o.dst64 ? LoadReg<uint64_t>(w.regs, o.src[k], i)
                                   : LoadReg<uint32_t>(w.regs, o.src[k], i);
        std::memcpy(data + k * o.bytes, &v, o.bytes);
      }
    }
    uint8_t* p = GlobalPtr(w, address, total);
    if (p == nullptr) {
      AddressFault(w, in, i, address, total, MemSpace::kGlobal, false);
      return true;
    }
    std::memcpy(p, data, total);
  }
  return false;
}

template <typename T>
T Reduce(uint8_t op, T a, T b) {
  switch (op) {
    case 0: return static_cast<T>(a + b);
    case 1: return a < b ? a : b;
    case 2: return a > b ? a : b;
    case 3: return static_cast<T>(a & b);
    default: return static_cast<T>(a | b);
  }
}

bool ExecSured(const Inst& in, Warp& w, uint32_t m) {
  const TexOperands& o = Ops(in, w);
  for (uint32_t mm = m; mm;) {
    const int i = __builtin_ctz(mm);
    mm &= mm - 1;
    const texture::TextureSpec* t = nullptr;
    uint64_t address = 0;
    bool skip = false;
    if (!SurfaceLane(in, w, i, o, &t, &address, &skip)) return true;
    if (skip) continue;
    uint8_t* p = GlobalPtr(w, address, o.bytes);
    if (p == nullptr) {
      AddressFault(w, in, i, address, o.bytes, MemSpace::kGlobal, false);
      return true;
    }
    // Lanes of one warp run one after the other, and blocks on other workers reach memory
    // through the same atomics as atom does.
    if (o.bytes == 8) {
      const uint64_t b = LoadReg<uint64_t>(w.regs, o.src[0], i);
      auto* ref = reinterpret_cast<std::atomic<uint64_t>*>(p);
      uint64_t old = ref->load(std::memory_order_relaxed), next;
      do {
        next = o.is_signed ? static_cast<uint64_t>(Reduce<int64_t>(
                                 o.op, static_cast<int64_t>(old), static_cast<int64_t>(b)))
                           : Reduce<uint64_t>(o.op, old, b);
      } while (!ref->compare_exchange_weak(old, next, std::memory_order_relaxed));
    } else {
      const uint32_t b = LoadReg<uint32_t>(w.regs, o.src[0], i);
      auto* ref = reinterpret_cast<std::atomic<uint32_t>*>(p);
      uint32_t old = ref->load(std::memory_order_relaxed), next;
      do {
        next = o.is_signed ? static_cast<uint32_t>(Reduce<int32_t>(
                                 o.op, static_cast<int32_t>(old), static_cast<int32_t>(b)))
                           : Reduce<uint32_t>(o.op, old, b);
      } while (!ref->compare_exchange_weak(old, next, std::memory_order_relaxed));
    }
  }
  return false;
}

// --- lowering ---

bool GeometryOf(const LowerCtx& c, Geometry* g) {
  static const struct {
    const char* mod;
    Geometry g;
  } kGeometries[] = {{".1d", Geometry::k1D},         {".2d", Geometry::k2D},
                     {".3d", Geometry::k3D},         {".a1d", Geometry::kLayered1D},
                     {".a2d", Geometry::kLayered2D}, {".cube", Geometry::kCube},
                     {".acube", Geometry::kLayeredCube}};
  for (const auto& entry : kGeometries) {
    if (c.Has(entry.mod)) {
      *g = entry.g;
      return true;
    }
  }
  return false;
}

// The [object, coordinates] operand: the handle register and the coordinate registers (the
// layer first for layered geometries).
Status ObjectAndCoords(LowerCtx& c, const ast::Operand& op, Geometry g, Ty ctype,
                       TexOperands* o, bool coords) {
  if (op.kind != ast::Operand::Kind::kAddress || op.name.empty()) {
    return c.ErrAt(op, "expected [object, coordinates]");
  }
  ast::Operand handle = op;
  handle.kind = ast::Operand::Kind::kReg;
  handle.elems.clear();
  if (op.offset != 0) return c.ErrAt(op, "an object operand takes no offset");
  if (handle.name[0] != '%') {
    return c.Unsupported("texture and surface references (.texref/.surfref: the independent "
                         "mode) are not supported; use texture and surface objects");
  }
  PVGPU_ASSIGN_OR_RETURN(o->handle, c.SrcOp(handle, Ty::kB64));
  if (!coords) {
    if (!op.elems.empty()) return c.ErrAt(op, "expected [object]");
    return Status::Ok();
  }
  if (op.elems.size() != 1) {
    return c.Unsupported("a separate sampler (the independent mode) is not supported");
  }
  const ast::Operand& v = op.elems[0];
  std::vector<ast::Operand> elems;
  if (v.kind == ast::Operand::Kind::kVector) {
    elems = v.elems;
  } else {
    elems.push_back(v);
  }
  const int layered = IsLayered(g) ? 1 : 0;
  const size_t need = static_cast<size_t>(layered + CoordDims(g));
  if (elems.size() < need || elems.size() > 4) {
    return c.ErrAt(v, "expected " + std::to_string(need) + " coordinates");
  }
  for (size_t k = 0; k < need; ++k) {
    const Ty t = (layered && k == 0) ? Ty::kB32 : ctype;
    PVGPU_ASSIGN_OR_RETURN(o->coord[k], c.SrcOp(elems[k], t));
  }
  return Status::Ok();
}

Status Destinations(LowerCtx& c, const ast::Operand& op, int count, Ty t, TexOperands* o) {
  if (op.kind == ast::Operand::Kind::kPair) {
    return c.Unsupported("the sparse-residency predicate");
  }
  std::vector<ast::Operand> elems;
  if (op.kind == ast::Operand::Kind::kVector) {
    elems = op.elems;
  } else {
    elems.push_back(op);
  }
  if (static_cast<int>(elems.size()) != count) {
    return c.ErrAt(op, "expected " + std::to_string(count) + " destinations");
  }
  for (int k = 0; k < count; ++k) {
    if (elems[k].kind == ast::Operand::Kind::kSink) continue;
    PVGPU_ASSIGN_OR_RETURN(o->dst[k], c.DstOp(elems[k], t));
  }
  return Status::Ok();
}

void EmitTex(LowerCtx& c, ExecFn fn, const TexOperands& o, uint8_t flags = 0) {
  Inst in;
  in.fn = fn;
  in.flags = flags;
  in.aux = c.img().tex.size();
  c.img().tex.push_back(o);
  c.Emit(in);
}

// tex.geom.v4.dtype.ctype d, [a, c] {, lod | dPdx, dPdy};
// tld4.comp.2d.v4.dtype.f32 d, [a, c];
Status LowerTexture(LowerCtx& c, bool gather) {
  if (c.ops().size() < 2) return c.Err("expected a destination and [object, coordinates]");
  Geometry g;
  if (!GeometryOf(c, &g)) return c.Unsupported("geometry");
  if (gather && g != Geometry::k2D && g != Geometry::kLayered2D && g != Geometry::kCube &&
      g != Geometry::kLayeredCube) {
    return c.Unsupported("tld4 geometry");
  }
  if (!c.Has(".v4")) return c.Unsupported("tex and tld4 return .v4 vectors here");
  const Ty dtype = c.TypeMod(0), ctype = c.TypeMod(1);
  if (dtype != Ty::kF32 && dtype != Ty::kS32 && dtype != Ty::kU32) {
    return c.Unsupported("result type");
  }
  if (ctype != Ty::kF32 && ctype != Ty::kS32) return c.Unsupported("coordinate type");
  TexOperands o;
  o.geometry = static_cast<uint8_t>(g);
  o.int_coords = ctype == Ty::kS32;
  if (gather) {
    o.gather = c.Has(".r") ? 0 : c.Has(".g") ? 1 : c.Has(".b") ? 2 : c.Has(".a") ? 3 : -1;
    if (o.gather < 0) return c.Unsupported("tld4 component");
    if (o.int_coords) return c.Unsupported("tld4 takes .f32 coordinates");
  }
  PVGPU_TRY(Destinations(c, c.ops()[0], 4, Ty::kB32, &o));
  PVGPU_TRY(ObjectAndCoords(c, c.ops()[1], g, ctype, &o, true));
  size_t next = 2;
  if (c.Has(".level")) {
    if (c.ops().size() <= next) return c.Err("tex.level needs a level of detail");
    o.lod_mode = static_cast<uint8_t>(tex::LodMode::kLevel);
    PVGPU_ASSIGN_OR_RETURN(o.lod, c.SrcOp(c.ops()[next++], Ty::kF32));
  } else if (c.Has(".grad")) {
    if (c.ops().size() < next + 2) return c.Err("tex.grad needs two gradients");
    o.lod_mode = static_cast<uint8_t>(tex::LodMode::kGrad);
    const int dims = CoordDims(g);
    for (int which = 0; which < 2; ++which) {
      const ast::Operand& v = c.ops()[next++];
      std::vector<ast::Operand> elems;
      if (v.kind == ast::Operand::Kind::kVector) {
        elems = v.elems;
      } else {
        elems.push_back(v);
      }
      if (elems.size() < static_cast<size_t>(dims)) return c.ErrAt(v, "gradient components");
      for (int d = 0; d < dims; ++d) {
        uint32_t* slot = which == 0 ? &o.dx[d] : &o.dy[d];
        PVGPU_ASSIGN_OR_RETURN(*slot, c.SrcOp(elems[d], Ty::kF32));
      }
    }
  }
  if (c.ops().size() != next) return c.Unsupported("texel offsets and depth compare");
  EmitTex(c, ExecTex, o);
  return Status::Ok();
}

Status LowerTex(LowerCtx& c) { return LowerTexture(c, false); }
Status LowerTld4(LowerCtx& c) { return LowerTexture(c, true); }

// txq{.level}.query.b32 d, [a] {, lod};   suq.query.b32 d, [a];
Status LowerQuery(LowerCtx& c, bool surface) {
  if (c.ops().size() < 2) return c.Err("expected a destination and [object]");
  static const char* kTexQueries[] = {"width",      "height",           "depth",
                                      "array_size", "num_mipmap_levels", "normalized_coords"};
  static const char* kSurfQueries[] = {"width", "height", "depth", "array_size"};
  TexOperands o;
  bool found = false;
  for (const char* q : surface ? std::span<const char* const>(kSurfQueries)
                               : std::span<const char* const>(kTexQueries)) {
    if (c.Has(std::string(".") + q)) {
      std::snprintf(o.query, sizeof(o.query), "%s", q);
      found = true;
    }
  }
  if (!found) return c.Unsupported("query");
  PVGPU_TRY(Destinations(c, c.ops()[0], 1, Ty::kB32, &o));
  PVGPU_TRY(ObjectAndCoords(c, c.ops()[1], Geometry::k1D, Ty::kB32, &o, false));
  size_t next = 2;
  if (!surface && c.Has(".level")) {
    if (c.ops().size() <= next) return c.Err("txq.level needs a level");
    PVGPU_ASSIGN_OR_RETURN(o.lod, c.SrcOp(c.ops()[next++], Ty::kB32));
  }
  if (c.ops().size() != next) return c.Err("unexpected operands");
  EmitTex(c, ExecQuery, o, surface ? 1 : 0);
  return Status::Ok();
}

Status LowerTxq(LowerCtx& c) { return LowerQuery(c, false); }
Status LowerSuq(LowerCtx& c) { return LowerQuery(c, true); }

bool BoundaryOf(const LowerCtx& c, uint8_t* b) {
  if (c.Has(".trap")) {
    *b = static_cast<uint8_t>(tex::Boundary::kTrap);
  } else if (c.Has(".clamp")) {
    *b = static_cast<uint8_t>(tex::Boundary::kClamp);
  } else if (c.Has(".zero")) {
    *b = static_cast<uint8_t>(tex::Boundary::kZero);
  } else {
    *b = static_cast<uint8_t>(tex::Boundary::kTrap);  // the default
  }
  return true;
}

// suld.b.geom.vec.dtype.clamp d, [a, b];   sust.{b,p}.geom.vec.ctype.clamp [a, b], c;
Status LowerSurface(LowerCtx& c, Kind kind) {
  PVGPU_TRY(c.NeedOps(2));
  Geometry g;
  if (!GeometryOf(c, &g) || g == Geometry::kCube || g == Geometry::kLayeredCube) {
    return c.Unsupported("geometry");
  }
  TexOperands o;
  o.geometry = static_cast<uint8_t>(g);
  o.formatted = c.Has(".p") ? 1 : 0;
  if (!o.formatted && !c.Has(".b")) return c.Unsupported("suld/sust/sured need .b or .p");
  if (kind == Kind::kSuld && o.formatted) return c.Unsupported("suld.p");
  BoundaryOf(c, &o.boundary);
  const Ty t = c.TypeMod(0);
  const uint32_t bytes = TypeSize(t);
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return c.Unsupported("type");
  o.vec = c.Has(".v2") ? 2 : c.Has(".v4") ? 4 : 1;
  o.bytes = static_cast<uint8_t>(bytes);
  o.dst64 = bytes == 8 ? 1 : 0;
  if (o.formatted && bytes != 4) return c.Unsupported("sust.p stores .b32 values");
  const Ty reg = bytes == 8 ? Ty::kB64 : Ty::kB32;
  if (kind == Kind::kSuld) {
    PVGPU_TRY(Destinations(c, c.ops()[0], o.vec, reg, &o));
    PVGPU_TRY(ObjectAndCoords(c, c.ops()[1], g, Ty::kB32, &o, true));
    EmitTex(c, ExecSuld, o);
    return Status::Ok();
  }
  PVGPU_TRY(ObjectAndCoords(c, c.ops()[0], g, Ty::kB32, &o, true));
  const ast::Operand& v = c.ops()[1];
  std::vector<ast::Operand> elems;
  if (v.kind == ast::Operand::Kind::kVector) {
    elems = v.elems;
  } else {
    elems.push_back(v);
  }
  if (elems.size() != o.vec) return c.ErrAt(v, "expected " + std::to_string(o.vec) + " values");
  for (size_t k = 0; k < elems.size(); ++k) {
    PVGPU_ASSIGN_OR_RETURN(o.src[k], c.SrcOp(elems[k], reg));
  }
  EmitTex(c, ExecSust, o);
  return Status::Ok();
}

Status LowerSuld(LowerCtx& c) { return LowerSurface(c, Kind::kSuld); }
Status LowerSust(LowerCtx& c) { return LowerSurface(c, Kind::kSust); }

// sured.{b,p}.op.geom.ctype.clamp [a, b], c;
Status LowerSured(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(2));
  Geometry g;
  if (!GeometryOf(c, &g) || g == Geometry::kCube || g == Geometry::kLayeredCube) {
    return c.Unsupported("geometry");
  }
  TexOperands o;
  o.geometry = static_cast<uint8_t>(g);
  if (c.Has(".p")) return c.Unsupported("sured.p (sured.b is supported)");
  if (!c.Has(".b")) return c.Unsupported("sured needs .b");
  BoundaryOf(c, &o.boundary);
  o.op = c.Has(".add") ? 0 : c.Has(".min") ? 1 : c.Has(".max") ? 2 : c.Has(".and") ? 3
         : c.Has(".or") ? 4 : 255;
  if (o.op == 255) return c.Unsupported("reduction");
  const Ty t = c.TypeMod(0);
  const uint32_t bytes = TypeSize(t);
  if (bytes != 4 && bytes != 8) return c.Unsupported("type");
  o.bytes = static_cast<uint8_t>(bytes);
  o.is_signed = IsSigned(t) ? 1 : 0;
  o.vec = 1;
  PVGPU_TRY(ObjectAndCoords(c, c.ops()[0], g, Ty::kB32, &o, true));
  PVGPU_ASSIGN_OR_RETURN(o.src[0], c.SrcOp(c.ops()[1], bytes == 8 ? Ty::kB64 : Ty::kB32));
  EmitTex(c, ExecSured, o);
  return Status::Ok();
}

}  // namespace

void RegisterTexture(OpTable& t) {
  t.Add("tex", LowerTex);
  t.Add("tld4", LowerTld4);
  t.Add("txq", LowerTxq);
  t.Add("suld", LowerSuld);
  t.Add("sust", LowerSust);
  t.Add("sured", LowerSured);
  t.Add("suq", LowerSuq);
}

}  // namespace pvgpu::ptx
