// Sparse matrix multiply-accumulate: mma.sp and mma.sp::ordered_metadata, every m16n8 form the
// PTX ISA defines for targets up to sm_90 (f16, bf16, tf32, s8/u8, s4/u4 from sm_80; e4m3/e5m2
// from sm_89). A is structured sparse: each row is cut into chunks of which only half the
// elements are stored in the A fragment, and a metadata register says where in its chunk each
// stored element belongs. Fragment and metadata layouts, and what the engine does where the ISA
// leaves the result undefined, are in docs/tensor-cores.md ("Sparse mma.sp").
#include <bit>
#include <string>

#include "ptx/mma_common.h"

namespace pvgpu::ptx::mma {
namespace {

// How the rows of A are cut: chunks of `width` elements of which `stored` are in the fragment,
// each chunk described by one 4-bit field of metadata (2:4 for 16- and 8-bit types, 1:2 for
// tf32, 4:8 in pairs for s4/u4).
struct Sparsity {
  uint32_t width, stored;
};
Sparsity SparsityOf(El a) {
  switch (a) {
    case El::kTF32:
      return {2, 1};
    case El::kS4:
    case El::kU4:
      return {8, 4};
    default:
      return {4, 2};
  }
}

// Column within its chunk of stored element `s` of the chunk, from the chunk's metadata field:
// 2:4: two 2-bit indices, bits 0-1 for stored element 0, bits 2-3 for element 1.
// 1:2 (tf32): 0b0100 for element 0 of the chunk, 0b1110 for element 1 (the indices of the two
//   16-bit halves of the tf32 value in a four-half chunk); bit 1 tells them apart.
// 4:8 (s4/u4): two 2-bit indices of two-element sub-chunks; stored elements 0-1 are the first
//   pair, 2-3 the second.
uint32_t ChunkCol(const Sparsity& sp, uint32_t field, uint32_t s) {
  if (sp.stored == 1) return (field >> 1) & 1;
  if (sp.stored == 2) return (field >> (2 * s)) & 3;
  return ((field >> (2 * (s >> 1))) & 3) * 2 + (s & 1);
}

// Lanes of each group of four that hold metadata (the rest are ignored): a row's chunks come in
// pieces of four (16 bits of metadata), one lane per piece.
uint32_t MetaLanes(uint32_t k, const Sparsity& sp) { return k / sp.width / 4; }

constexpr uint32_t kMaxStored = 16 * 64;  // A of m16n8k128 s4: 16 rows of 64 stored elements

// Register list: nA, nB, nC, nD, then the registers of a, b, c and d (A holds the stored
// elements: an M x K/2 matrix in the layout of a dense mma.sync A fragment). a[0]: metadata
// register e; n: sparsity selector; flags bit0: .satfinite.
bool ExecMmaSp(const Inst& in, Warp& w, uint32_t m) {
  if (!NeedFullWarp(in, w, m, "mma.sp")) return true;
  const auto s = std::bit_cast<MmaDesc>(in.imm);
  const uint32_t* list = w.launch->image->reg_lists.data() + in.aux;
  const uint32_t na = list[0], nb = list[1], nc = list[2], nd = list[3];
  const uint32_t* ra = list + 4;
  const uint32_t* rb = ra + na;
  const uint32_t* rc = rb + nb;
  const uint32_t* rd = rc + nc;
  const uint32_t M = s.m, N = s.n, K = s.k, KS = K / 2;
  uint8_t* r = w.regs;
  double A[kMaxStored], B[kMaxB], C[kMaxC], D[kMaxC];
  GatherFragment(kA, s.a, r, ra, na, KS, A);
  GatherFragment(kB, s.b, r, rb, nb, N, B);
  GatherFragment(kC, s.c, r, rc, nc, N, C);
  // Group g (lanes 4g .. 4g+3) describes rows g and g + 8. Piece p of those rows is in lane
  // 4g + selector * lanes + p: bits 0-15 for row g, 16-31 for row g + 8, chunk 4p + q of the
  // row in bits 4q .. 4q+3 of its half.
  const Sparsity sp = SparsityOf(s.a);
  const uint32_t lanes = MetaLanes(K, sp);
  const uint32_t* meta = RegPtr<uint32_t>(r, in.a[0]);
  MmaDesc row = s;
  row.m = 1;
  row.k = static_cast<uint16_t>(KS);
  for (uint32_t i = 0; i < M; ++i) {
    // Each stored element multiplies the row of B its metadata names, in the order they are
    // stored (the k order when the indices are sorted).
    double Bk[kMaxStored / 16 * 8];
    const uint32_t g = i % 8, half = i / 8;
    for (uint32_t c = 0; c < KS; ++c) {
      const uint32_t chunk = c / sp.stored;
      const uint32_t lane = 4 * g + in.n * lanes + chunk / 4;
      const uint32_t field = (meta[lane] >> (16 * half + 4 * (chunk % 4))) & 15;
      const uint32_t k = chunk * sp.width + ChunkCol(sp, field, c % sp.stored);
      for (uint32_t j = 0; j < N; ++j) Bk[c * N + j] = B[k * N + j];
    }
    Multiply(row, 0, A + i * KS, Bk, C + i * N, D + i * N);
  }
  ScatterFragment(s.d, r, rd, nd, N, D, in.flags & 1);
  return false;
}

}  // namespace

// mma.sp{::ordered_metadata}.sync.aligned.m16n8kK.row.col{.satfinite}.dtype.atype.btype.ctype
//   d, a, b, c, e, f;
Status LowerMmaSparse(LowerCtx& c) {
  if (!c.Has(".sync") || !c.Has(".aligned")) return c.Unsupported("mma.sp needs .sync.aligned");
  for (const auto& mod : c.inst().mods)
    if (mod.rfind(".kind::", 0) == 0) return c.Unsupported("mma.sp with .kind (sm_120)");
  uint32_t M, N, K;
  MmaDesc s;
  if (!ParseMmaDesc(c, &s, &M, &N, &K)) return c.Unsupported();
  // The forms of the ISA's syntax for targets up to sm_90: all m16n8, C and D of one type.
  auto k_is = [&](uint32_t k1, uint32_t k2) { return M == 16 && N == 8 && (K == k1 || K == k2); };
  auto both = [&](El x, El y) { return (s.a == x || s.a == y) && (s.b == x || s.b == y); };
  auto acc = [&](El x) { return s.c == x && s.d == x; };
  bool ok = false;
  if (s.a == El::kF16 && s.b == El::kF16)
    ok = (acc(El::kF16) || acc(El::kF32)) && k_is(16, 32);
  else if (s.a == El::kBF16 && s.b == El::kBF16)
    ok = acc(El::kF32) && k_is(16, 32);
  else if (s.a == El::kTF32 && s.b == El::kTF32)
    ok = acc(El::kF32) && k_is(8, 16);
  else if (both(El::kE4M3, El::kE5M2))
    ok = acc(El::kF32) && k_is(64, 64);
  else if (both(El::kS8, El::kU8))
    ok = acc(El::kS32) && k_is(32, 64);
  else if (both(El::kS4, El::kU4))
    ok = acc(El::kS32) && k_is(64, 128);
  if (!ok) return c.Unsupported("this mma.sp shape and type combination");
  if (!Layouts(c, ".row", ".col")) return c.Unsupported("mma.sp layouts other than .row.col");
  const bool sat = c.Has(".satfinite");
  if (sat && !IsIntEl(s.a)) return c.Unsupported(".satfinite on a floating-point mma.sp");
  PVGPU_TRY(c.NeedOps(6));
  // The selector names the lanes of each group of four that hold the metadata: any of the four
  // when one lane holds it, a pair (0: lanes 0-1, 1: lanes 2-3), or all four (0). Other values
  // are undefined in the ISA; ptxas (CUDA 13.0) refuses them too, except for f16 m16n8k32 with
  // f32 accumulators, where it takes 0..3.
  const ast::Operand& f = c.ops()[5];
  if (f.kind != ast::Operand::Kind::kInt)
    return c.ErrAt(f, "the sparsity selector of mma.sp must be an integer constant");
  const uint32_t choices = 4 / MetaLanes(K, SparsityOf(s.a));
  if (f.value >= choices) {
    return c.ErrAt(f, "sparsity selector " + std::to_string(static_cast<int64_t>(f.value)) +
                          " is undefined for this mma.sp shape and type (defined: 0 to " +
                          std::to_string(choices - 1) + ")");
  }
  auto regs = [&](El e, uint32_t elems) { return elems / (32 * PerReg(e)); };
  PVGPU_ASSIGN_OR_RETURN(uint32_t e, c.Src(4, Ty::kB32));
  PVGPU_ASSIGN_OR_RETURN(Inst in, MmaInst(c, &ExecMmaSp, s, sat ? 1 : 0, regs(s.a, M * K / 2),
                                          regs(s.b, K * N), regs(s.c, M * N), regs(s.d, M * N)));
  in.a[0] = e;
  in.n = static_cast<uint16_t>(f.value);
  c.Emit(in);
  return Status::Ok();
}

}  // namespace pvgpu::ptx::mma
