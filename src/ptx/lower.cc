#include "ptx/lower.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>

#include "ptx/handlers.h"
#include "ptx/lexer.h"
#include "ptx/native.h"
#include "ptx/program.h"
#include "ptx/warp.h"

namespace pvgpu::ptx {
namespace {

constexpr uint32_t SlotBytes(char cls) {
  return cls == 'p' ? 4 : cls == 'w' ? 128 : cls == 'q' ? 512 : 256;
}
constexpr uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) & ~(a - 1); }

// Register class conversion inserted when an instruction's type and a register's declared
// width differ (ld.u8 into a 32-bit register, cvt from a 64-bit register, ...).
// a[0] dst, a[1] src; flags bit0: dst 64-bit, bit1: src 64-bit, bit2: signed; n: source bits.
bool ExecExtend(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE(&ExecExtend, NOp::kExtend);
  const bool d64 = in.flags & 1, s64 = in.flags & 2, sgn = in.flags & 4;
  const unsigned bits = in.n;
  ForLanes(m, [&](int i) {
    uint64_t v =
        s64 ? LoadReg<uint64_t>(w.regs, in.a[1], i) : LoadReg<uint32_t>(w.regs, in.a[1], i);
    if (bits < 64) {
      uint64_t mask = (uint64_t{1} << bits) - 1;
      v &= mask;
      if (sgn && (v >> (bits - 1)) & 1) v |= ~mask;
    }
    if (d64)
      StoreReg<uint64_t>(w.regs, in.a[0], i, v);
    else
      StoreReg<uint32_t>(w.regs, in.a[0], i, static_cast<uint32_t>(v));
  });
  return false;
}

// Predicate negation for "!%p" source operands.
bool ExecNotPred(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE(&ExecNotPred, NOp::kPredLogic, Ty::kPred, Ty::kPred, 3);
  uint32_t& d = *RegPtr<uint32_t>(w.regs, in.a[0]);
  uint32_t s = ~*RegPtr<uint32_t>(w.regs, in.a[1]);
  d = (d & ~m) | (s & m);
  return false;
}

// dst(64) = src(64) + imm: frame-relative symbol addresses inside .func bodies.
bool ExecAddImm64(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE(&ExecAddImm64, NOp::kAddImm64);
  ForLanes(m, [&](int i) {
    StoreReg<uint64_t>(w.regs, in.a[0], i,
                       LoadReg<uint64_t>(w.regs, in.a[1], i) + static_cast<uint64_t>(in.imm));
  });
  return false;
}

uint64_t ConvertImmediate(const ast::Operand& o, Ty t) {
  using K = ast::Operand::Kind;
  if (t == Ty::kF32) {
    if (o.kind == K::kF32) return o.value;
    double d;
    if (o.kind == K::kF64)
      std::memcpy(&d, &o.value, 8);
    else
      d = static_cast<double>(static_cast<int64_t>(o.value));
    return std::bit_cast<uint32_t>(static_cast<float>(d));
  }
  if (t == Ty::kF64) {
    if (o.kind == K::kF64) return o.value;
    if (o.kind == K::kF32)
      return std::bit_cast<uint64_t>(
          static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(o.value))));
    return std::bit_cast<uint64_t>(static_cast<double>(static_cast<int64_t>(o.value)));
  }
  if (o.kind == K::kF64 && o.decimal_float) {
    double d;
    std::memcpy(&d, &o.value, 8);
    if (t == Ty::kF16 || t == Ty::kBF16) return 0;  // decimal half literals are not emitted
    return static_cast<uint64_t>(static_cast<int64_t>(d));
  }
  uint32_t size = TypeSize(t);
  if (size >= 8 || size == 0) return o.value;
  return o.value & ((uint64_t{1} << (size * 8)) - 1);
}

}  // namespace

LowerCtx::LowerCtx(const ast::Module& m, ProgramImpl& prog, KernelImage& img)
    : mod_(m), prog_(prog), img_(img) {
  funcs_.resize(m.functions.size());
  call_graph_.resize(m.functions.size());
  for (size_t i = 0; i < m.functions.size(); ++i) {
    Sym s;
    s.kind = Sym::Kind::kFunc;
    s.index = static_cast<int>(i);
    module_syms_[m.functions[i].name] = s;
  }
  for (const auto& g : m.globals) {
    Sym s;
    if (g.space == ast::Space::kShared) {
      s.kind = Sym::Kind::kShared;
      s.off = UINT32_MAX;  // laid out on first use
    } else {
      s.kind = Sym::Kind::kGlobal;
      auto it = prog.global_index_.find(g.name);
      s.index = it == prog.global_index_.end() ? -1 : it->second;
    }
    module_syms_[g.name] = s;
  }
  // Special registers: fixed slots filled by the executor when a warp starts.
  auto special = [&](const std::string& name, char cls) {
    Sym s;
    s.kind = Sym::Kind::kReg;
    s.cls = cls;
    s.ty = cls == 'd' ? Ty::kU64 : Ty::kU32;
    s.off = AllocReg(cls);
    module_syms_[name] = s;
    return s.off;
  };
  const char* xyz[3] = {".x", ".y", ".z"};
  for (int i = 0; i < 3; ++i) {
    img_.sp.tid[i] = special(std::string("%tid") + xyz[i], 'w');
    img_.sp.ntid[i] = special(std::string("%ntid") + xyz[i], 'w');
    img_.sp.ctaid[i] = special(std::string("%ctaid") + xyz[i], 'w');
    img_.sp.nctaid[i] = special(std::string("%nctaid") + xyz[i], 'w');
  }
  img_.sp.laneid = special("%laneid", 'w');
  img_.sp.warpid = special("%warpid", 'w');
  img_.sp.nwarpid = special("%nwarpid", 'w');
  img_.sp.smid = special("%smid", 'w');
  img_.sp.nsmid = special("%nsmid", 'w');
  img_.sp.gridid = special("%gridid", 'd');
  img_.sp.lanemask_eq = special("%lanemask_eq", 'w');
  img_.sp.lanemask_lt = special("%lanemask_lt", 'w');
  img_.sp.lanemask_le = special("%lanemask_le", 'w');
  img_.sp.lanemask_gt = special("%lanemask_gt", 'w');
  img_.sp.lanemask_ge = special("%lanemask_ge", 'w');
  img_.sp.dynamic_smem = special("%dynamic_smem_size", 'w');
  img_.sp.total_smem = special("%total_smem_size", 'w');
  img_.sp.fp = AllocReg('d');
  img_.sp.cc = AllocReg('p');
  // Thread block clusters (sm_90): every launch here is a grid of clusters of one block
  // (clusters of more are refused at launch), so a cluster's registers are its block's or
  // constants.
  auto alias = [&](const std::string& name, const std::string& of) {
    module_syms_[name] = module_syms_[of];
  };
  auto constant = [&](const std::string& name, char cls, uint64_t value) {
    Sym s;
    s.kind = Sym::Kind::kReg;
    s.cls = cls;
    s.ty = cls == 'p' ? Ty::kPred : Ty::kU32;
    s.off = Const(cls, value);
    module_syms_[name] = s;
  };
  for (int i = 0; i < 3; ++i) {
    alias(std::string("%clusterid") + xyz[i], std::string("%ctaid") + xyz[i]);
    alias(std::string("%nclusterid") + xyz[i], std::string("%nctaid") + xyz[i]);
    constant(std::string("%cluster_ctaid") + xyz[i], 'w', 0);
    constant(std::string("%cluster_nctaid") + xyz[i], 'w', 1);
  }
  constant("%cluster_ctarank", 'w', 0);
  constant("%cluster_nctarank", 'w', 1);
  constant("%is_explicit_cluster", 'p', 0);
}

uint32_t LowerCtx::AllocReg(char cls) {
  uint32_t size = SlotBytes(cls);
  uint32_t off = AlignUp(img_.reg_bytes, cls == 'p' ? 4 : 64);
  img_.reg_bytes = off + size;
  if (img_.reg_template.size() < img_.reg_bytes)
    img_.reg_template.resize(AlignUp(img_.reg_bytes, 64));
  return off;
}

uint32_t LowerCtx::Temp(char cls) { return AllocReg(cls); }

void LowerCtx::DeclareEnvReg(const std::string& name) {
  if (DeclareReservedShared(name)) return;
  constexpr std::string_view kPrefix = "%envreg";
  if (name.size() <= kPrefix.size() || name.size() > kPrefix.size() + 2 ||
      name.compare(0, kPrefix.size(), kPrefix) != 0 || module_syms_.count(name))
    return;
  const std::string digits = name.substr(kPrefix.size());
  for (char ch : digits)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return;
  const uint32_t index = static_cast<uint32_t>(std::stoul(digits));
  if (index >= static_cast<uint32_t>(kNumEnvRegs) || std::to_string(index) != digits) return;
  Sym s;
  s.kind = Sym::Kind::kReg;
  s.cls = 'w';
  s.ty = Ty::kB32;
  s.off = AllocReg('w');
  module_syms_[name] = s;
  img_.envregs.emplace_back(index, s.off);
}

// The registers that describe the shared memory NVIDIA's system software reserves in each block
// (sm_80+; cooperative groups keeps barrier state there): declared, like %envregN, only for
// kernels that name them, whose blocks then get the region (ReservedShared, ir.h).
bool LowerCtx::DeclareReservedShared(const std::string& name) {
  static const struct {
    const char* name;
    ReservedShared::Which which;
  } kRegisters[] = {{"%reserved_smem_offset_begin", ReservedShared::kBegin},
                    {"%reserved_smem_offset_end", ReservedShared::kEnd},
                    {"%reserved_smem_offset_cap", ReservedShared::kCap},
                    {"%reserved_smem_offset_0", ReservedShared::kOffset0},
                    {"%reserved_smem_offset_1", ReservedShared::kOffset1}};
  for (const auto& r : kRegisters) {
    if (name != r.name) continue;
    if (module_syms_.count(name)) return true;
    Sym s;
    s.kind = Sym::Kind::kReg;
    s.cls = 'w';
    s.ty = Ty::kB32;
    s.off = AllocReg('w');
    module_syms_[name] = s;
    img_.reserved_shared.emplace_back(r.which, s.off);
    return true;
  }
  return false;
}

uint32_t LowerCtx::Const(char cls, uint64_t bits) {
  if (cls == 'p') bits = bits ? kFullMask : 0;
  if (cls == 'w') bits &= 0xFFFFFFFFu;
  auto key = std::make_pair(cls, bits);
  auto it = consts_.find(key);
  if (it != consts_.end()) return it->second;
  uint32_t off = AllocReg(cls);
  uint8_t* p = img_.reg_template.data() + off;
  if (cls == 'p') {
    uint32_t v = static_cast<uint32_t>(bits);
    std::memcpy(p, &v, 4);
  } else {
    for (int i = 0; i < 32; ++i) {
      if (cls == 'w') {
        uint32_t v = static_cast<uint32_t>(bits);
        std::memcpy(p + 4 * i, &v, 4);
      } else {
        std::memcpy(p + 8 * i, &bits, 8);
      }
    }
  }
  consts_[key] = off;
  return off;
}

Status LowerCtx::Err(const std::string& reason) const {
  return PtxErrorAt(cur_ ? cur_->line : 0, cur_ ? cur_->col : 0, reason);
}
Status LowerCtx::ErrAt(const ast::Operand& o, const std::string& reason) const {
  return PtxErrorAt(o.line, o.col, reason);
}
Status LowerCtx::Unsupported(const std::string& why) const {
  return Err("unsupported instruction '" + cur_->text + "'" + (why.empty() ? "" : ": " + why));
}
bool LowerCtx::Has(std::string_view mod) const {
  for (const auto& m : cur_->mods)
    if (m == mod) return true;
  return false;
}
Ty LowerCtx::TypeMod(int i) const {
  for (const auto& m : cur_->mods) {
    Ty t = ParseType(m);
    if (t != Ty::kNone && i-- == 0) return t;
  }
  return Ty::kNone;
}
int LowerCtx::NumTypeMods() const {
  int n = 0;
  for (const auto& m : cur_->mods) n += ParseType(m) != Ty::kNone;
  return n;
}
Status LowerCtx::NeedOps(size_t n) const {
  if (cur_->ops.size() != n)
    return Err("'" + cur_->text + "' expects " + std::to_string(n) + " operands, got " +
               std::to_string(cur_->ops.size()));
  return Status::Ok();
}

const Sym* LowerCtx::Lookup(const std::string& name, uint32_t* reg_off) const {
  auto find = [&](const std::unordered_map<std::string, Sym>& m,
                  const std::string& key) -> const Sym* {
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  };
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    if (const Sym* sym = find(*s, name)) {
      if (sym->kind == Sym::Kind::kReg && sym->count > 0) continue;  // a range prefix itself
      *reg_off = sym->off;
      return sym;
    }
  }
  // %r12 -> range %r<N>.
  size_t d = name.size();
  while (d > 0 && std::isdigit(static_cast<unsigned char>(name[d - 1]))) --d;
  if (d < name.size() && d > 0 && name.size() - d <= 9) {
    std::string prefix = name.substr(0, d);
    uint32_t idx = static_cast<uint32_t>(std::stoul(name.substr(d)));
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
      const Sym* sym = find(*s, prefix);
      if (sym && sym->kind == Sym::Kind::kReg && sym->count > 0) {
        if (idx >= sym->count) return nullptr;
        *reg_off = sym->off + idx * SlotBytes(sym->cls);
        return sym;
      }
    }
  }
  if (const Sym* sym = find(module_syms_, name)) {
    *reg_off = sym->off;
    return sym;
  }
  return nullptr;
}

StatusOr<const Sym*> LowerCtx::SharedSym(const std::string& name) {
  Sym& s = module_syms_[name];
  if (s.off == UINT32_MAX) {
    auto it = prog_.shared_vars_.find(name);
    if (it == prog_.shared_vars_.end()) return Err("unknown shared variable " + name);
    if (it->second.dynamic) {
      s.off = 0;  // patched to the end of static shared memory by the executor
      s.is_extern_shared = true;
    } else {
      uint32_t a = std::max<uint32_t>(it->second.align, 1);
      shared_cursor_ = AlignUp(shared_cursor_, a);
      if (it->second.size > kMaxSharedBytesPerBlockOptin)
        return Err("shared variable " + name + " too large");
      s.off = shared_cursor_;
      shared_cursor_ += static_cast<uint32_t>(it->second.size);
      img_.static_shared = shared_cursor_;
    }
  }
  return &s;
}

StatusOr<uint32_t> LowerCtx::SrcOp(const ast::Operand& o_in, Ty t) {
  using K = ast::Operand::Kind;
  // Registers need no '%' prefix (inline asm declares ".reg .f16 low;").
  ast::Operand renamed;
  const ast::Operand* op = &o_in;
  uint32_t probe;
  if (o_in.kind == K::kReg || o_in.kind == K::kSymbol) DeclareEnvReg(o_in.name);
  if (o_in.kind == K::kSymbol) {
    const Sym* s = Lookup(o_in.name, &probe);
    if (s && s->kind == Sym::Kind::kReg) {
      renamed = o_in;
      renamed.kind = K::kReg;
      op = &renamed;
    }
  }
  const ast::Operand& o = *op;
  const char want = ClassOf(t);
  if (want == 'q' && o.kind != K::kReg) return ErrAt(o, "expected a .b128 register");
  switch (o.kind) {
    case K::kReg: {
      if (o.name == "%clock" || o.name == "%clock64" || o.name == "%globaltimer" ||
          o.name == "%globaltimer_lo" || o.name == "%globaltimer_hi") {
        Inst in;
        in.fn = ExecReadClock;
        bool wide = o.name == "%clock64" || o.name == "%globaltimer";
        in.a[0] = Temp(wide ? 'd' : 'w');
        in.aux = o.name == "%clock"            ? 0
                 : o.name == "%clock64"        ? 1
                 : o.name == "%globaltimer"    ? 2
                 : o.name == "%globaltimer_lo" ? 3
                                               : 4;
        EmitUnguarded(in);
        if ((wide ? 'd' : 'w') != want) return ErrAt(o, "type mismatch for " + o.name);
        return in.a[0];
      }
      uint32_t off;
      const Sym* s = Lookup(o.name, &off);
      if (!s || s->kind != Sym::Kind::kReg) return ErrAt(o, "unknown register " + o.name);
      if (o.neg) {
        if (s->cls != 'p') return ErrAt(o, "'!' on a non-predicate");
        Inst in;
        in.fn = ExecNotPred;
        in.a[0] = Temp('p');
        in.a[1] = off;
        in.aux = 0;
        EmitUnguarded(in);
        // ExecNotPred merges by mask; with the full mask it writes every lane.
        return in.a[0];
      }
      if (s->cls == want) return off;
      if (s->cls == 'p' || want == 'p')
        return ErrAt(o, "predicate/register mismatch for " + o.name);
      if (s->cls == 'q' || want == 'q') return ErrAt(o, ".b128 register mismatch for " + o.name);
      Inst in;
      in.fn = ExecExtend;
      in.a[0] = Temp(want);
      in.a[1] = off;
      in.flags = (want == 'd' ? 1 : 0) | (s->cls == 'd' ? 2 : 0) | (IsSigned(s->ty) ? 4 : 0);
      in.n = static_cast<uint16_t>(std::min<uint32_t>(TypeSize(s->ty), 8) * 8);
      if (in.n == 0) in.n = 32;
      EmitUnguarded(in);
      return in.a[0];
    }
    case K::kInt:
    case K::kF32:
    case K::kF64:
      if (t == Ty::kPred) return Const('p', o.value != 0);
      return Const(want, ConvertImmediate(o, t));
    case K::kSymbol: {
      uint32_t off;
      const Sym* s = Lookup(o.name, &off);
      if (!s) return ErrAt(o, "unknown symbol " + o.name);
      if (want == 'p') return ErrAt(o, "symbol used as predicate");
      switch (s->kind) {
        case Sym::Kind::kGlobal: {
          if (s->index < 0) return ErrAt(o, "unknown global " + o.name);
          LaunchConst lc;
          lc.reg = AllocReg(want);
          lc.wide = want == 'd';
          lc.global = s->index;
          lc.addend = o.offset;
          img_.launch_consts.push_back(lc);
          return lc.reg;
        }
        case Sym::Kind::kShared: {
          PVGPU_ASSIGN_OR_RETURN(const Sym* sh, SharedSym(o.name));
          if (sh->is_extern_shared) {
            // Dynamic shared memory starts after the static part, known only at launch.
            LaunchConst lc;
            lc.reg = AllocReg(want);
            lc.wide = want == 'd';
            lc.global = -2;
            lc.addend = o.offset;
            img_.launch_consts.push_back(lc);
            return lc.reg;
          }
          return Const(want, sh->off + static_cast<uint64_t>(o.offset));
        }
        case Sym::Kind::kKParam:
          return Const(want, s->off + static_cast<uint64_t>(o.offset));
        case Sym::Kind::kFrame: {
          if (in_kernel_) return Const(want, s->off + static_cast<uint64_t>(o.offset));
          if (want != 'd') return ErrAt(o, "32-bit local address in a function");
          Inst in;
          in.fn = ExecAddImm64;
          in.a[0] = Temp('d');
          in.a[1] = img_.sp.fp;
          in.imm = s->off + o.offset;
          EmitUnguarded(in);
          return in.a[0];
        }
        case Sym::Kind::kFunc:
          return Const(want, kFuncWindow + 16 * static_cast<uint64_t>(s->index) +
                                 static_cast<uint64_t>(o.offset));
        default:
          return ErrAt(o, "cannot take the address of " + o.name);
      }
    }
    default:
      return ErrAt(o, "unexpected operand kind");
  }
}

Status LowerCtx::DstMaybePair(Inst& in, Ty first, Ty second) {
  const ast::Operand& d = ops()[0];
  if (d.kind == ast::Operand::Kind::kPair) {
    PVGPU_ASSIGN_OR_RETURN(in.a[0], DstOp(d.elems[0], first));
    PVGPU_ASSIGN_OR_RETURN(in.a[1], DstOp(d.elems[1], second));
  } else {
    PVGPU_ASSIGN_OR_RETURN(in.a[0], DstOp(d, first));
  }
  return Status::Ok();
}

StatusOr<uint32_t> LowerCtx::DstOp(const ast::Operand& o, Ty t) {
  const char want = ClassOf(t);
  if (o.kind == ast::Operand::Kind::kSink) return Temp(want);
  if ((o.kind != ast::Operand::Kind::kReg && o.kind != ast::Operand::Kind::kSymbol) || o.neg)
    return ErrAt(o, "expected a destination register");
  DeclareEnvReg(o.name);
  uint32_t off;
  const Sym* s = Lookup(o.name, &off);
  if (!s || s->kind != Sym::Kind::kReg) return ErrAt(o, "unknown register " + o.name);
  if (module_syms_.count(o.name)) return ErrAt(o, "cannot write special register " + o.name);
  if ((s->cls == 'p') != (want == 'p'))
    return ErrAt(o, "predicate/register mismatch for " + o.name);
  if ((s->cls == 'q') != (want == 'q')) return ErrAt(o, ".b128 register mismatch for " + o.name);
  uint32_t tsize = TypeSize(t), rsize = TypeSize(s->ty);
  if (s->cls == want && !(want == 'w' && IsSigned(t) && tsize < rsize && tsize > 0)) return off;
  // Write to a temporary of the instruction's width, then widen or narrow into the register.
  uint32_t tmp = Temp(want);
  Inst fx;
  fx.fn = ExecExtend;
  fx.a[0] = off;
  fx.a[1] = tmp;
  fx.flags = (s->cls == 'd' ? 1 : 0) | (want == 'd' ? 2 : 0) | (IsSigned(t) ? 4 : 0);
  fx.n = static_cast<uint16_t>(tsize ? tsize * 8 : 32);
  fixups_.push_back(fx);
  return tmp;
}

StatusOr<Addr> LowerCtx::Address(const ast::Operand& o, MemSpace space) {
  if (!o.elems.empty()) return ErrAt(o, "an address has one base (a texture operand here?)");
  if (o.kind != ast::Operand::Kind::kAddress) return ErrAt(o, "expected an address");
  Addr a;
  a.space = space;
  a.imm = o.offset;
  if (o.name.empty()) {
    if (space == MemSpace::kGeneric) a.space = MemSpace::kGlobal;
    return a;
  }
  DeclareEnvReg(o.name);
  uint32_t off;
  const Sym* s = Lookup(o.name, &off);
  if (!s) return ErrAt(o, "unknown symbol " + o.name);
  switch (s->kind) {
    case Sym::Kind::kReg:
      if (s->cls == 'p') return ErrAt(o, "predicate used as address");
      a.base = off;
      a.base32 = s->cls == 'w';
      if (space == MemSpace::kKParam && !in_kernel_) a.space = MemSpace::kLocal;
      return a;
    case Sym::Kind::kGlobal: {
      if (space != MemSpace::kGlobal && space != MemSpace::kGeneric)
        return ErrAt(o, o.name + " is not in this state space");
      ast::Operand sym = o;
      sym.kind = ast::Operand::Kind::kSymbol;
      sym.offset = 0;
      PVGPU_ASSIGN_OR_RETURN(a.base, SrcOp(sym, Ty::kU64));
      a.space = MemSpace::kGlobal;
      return a;
    }
    case Sym::Kind::kShared: {
      if (space != MemSpace::kShared && space != MemSpace::kGeneric)
        return ErrAt(o, o.name + " is not in this state space");
      PVGPU_ASSIGN_OR_RETURN(const Sym* sh, SharedSym(o.name));
      if (sh->is_extern_shared) {
        ast::Operand sym = o;
        sym.kind = ast::Operand::Kind::kSymbol;
        sym.offset = 0;
        PVGPU_ASSIGN_OR_RETURN(a.base, SrcOp(sym, Ty::kU64));
      } else {
        a.imm += sh->off;
      }
      if (space == MemSpace::kGeneric) {
        a.space = MemSpace::kShared;  // a named shared variable needs no window
      }
      return a;
    }
    case Sym::Kind::kFrame:
      if (space != MemSpace::kLocal && space != MemSpace::kKParam)
        return ErrAt(o, o.name + " is not in this state space");
      a.space = MemSpace::kLocal;
      a.imm += s->off;
      if (!in_kernel_) a.base = img_.sp.fp;
      return a;
    case Sym::Kind::kKParam:
      if (space != MemSpace::kKParam) return ErrAt(o, o.name + " is a kernel parameter");
      a.imm += s->off;
      return a;
    default:
      return ErrAt(o, "bad address base " + o.name);
  }
}

StatusOr<int> LowerCtx::FuncIndex(const std::string& name) const {
  uint32_t off;
  const Sym* s = Lookup(name, &off);
  if (!s || s->kind != Sym::Kind::kFunc) return Err("unknown function " + name);
  return s->index;
}

StatusOr<uint32_t> LowerCtx::FrameSymOffset(const ast::Operand& o, uint32_t* size) {
  uint32_t off;
  const Sym* s = o.kind == ast::Operand::Kind::kSymbol ? Lookup(o.name, &off) : nullptr;
  if (!s || s->kind != Sym::Kind::kFrame)
    return ErrAt(o, "call arguments must be .param variables");
  *size = s->size;
  return s->off;
}

void LowerCtx::EmitUnguarded(Inst in) {
  img_.code.push_back(in);
  img_.debug.push_back(DebugInfo{cur_ ? cur_->line : 0, cur_ ? cur_->text : "ret"});
}

void LowerCtx::Emit(Inst in) {
  in.guard = guard_;
  in.guard_neg = guard_neg_;
  EmitUnguarded(in);
  for (Inst fx : fixups_) {
    fx.guard = guard_;
    fx.guard_neg = guard_neg_;
    EmitUnguarded(fx);
  }
  fixups_.clear();
}

Status LowerCtx::EmitBranch(Inst in, const ast::Operand& o) {
  if (o.kind != ast::Operand::Kind::kSymbol) return ErrAt(o, "expected a label");
  pending_labels_.push_back({static_cast<uint32_t>(img_.code.size()), o.name, o.line, o.col});
  Emit(in);
  return Status::Ok();
}

}  // namespace pvgpu::ptx
