// Pieces the tensor-core families share (ops_mma.cc: mma.sync, wmma, ldmatrix; ops_mma_sp.cc:
// mma.sp): element types of matrix fragments, the ISA's mma.sync fragment layout, the
// arithmetic of D = A * B + C, and the lowering helpers for fragment operands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptx/exec_util.h"

namespace pvgpu::ptx::mma {

// Element types of matrix operands. kTF32 is an f32 bit pattern of which mma reads the top 19
// bits; kE4M3 and kE5M2 are the 8-bit floats; kB1 is one bit. Integer types come last.
enum class El : uint8_t {
  kNone,
  kF16,
  kBF16,
  kTF32,
  kF32,
  kF64,
  kE4M3,
  kE5M2,
  kS8,
  kU8,
  kS4,
  kU4,
  kB1,
  kS32
};

El ParseEl(const std::string& m);
// The element-type modifiers of the current instruction, in order.
std::vector<El> ElMods(const LowerCtx& c);

inline uint32_t ElBits(El e) {
  switch (e) {
    case El::kF16:
    case El::kBF16:
      return 16;
    case El::kF64:
      return 64;
    case El::kE4M3:
    case El::kE5M2:
    case El::kS8:
    case El::kU8:
      return 8;
    case El::kS4:
    case El::kU4:
      return 4;
    case El::kB1:
      return 1;
    default:
      return 32;
  }
}
// Elements packed in one register (f64 fragments use 64-bit registers).
inline uint32_t PerReg(El e) { return e == El::kF64 ? 1 : 32 / ElBits(e); }
inline bool IsIntEl(El e) { return e >= El::kS8; }
inline Ty RegTy(El e) { return e == El::kF64 ? Ty::kF64 : e == El::kF32 ? Ty::kF32 : Ty::kB32; }

// Value of element j of a fragment register. Every element type is exact in a double, and so
// are the integer sums of Multiply (well under 2^53).
double Decode(El e, uint64_t word, uint32_t j);
// Bits of an accumulator element; `sat` clamps integer results to the s32 range (.satfinite),
// otherwise they wrap.
uint64_t Encode(El e, double v, bool sat);

// Faults the warp (and returns false) unless all 32 lanes are in `m`.
bool NeedFullWarp(const Inst& in, Warp& w, uint32_t m, const char* what);

struct MmaDesc {
  uint8_t m = 0, n = 0;
  uint16_t k = 0;
  El a = El::kNone, b = El::kNone, c = El::kNone, d = El::kNone;
};
static_assert(sizeof(MmaDesc) == sizeof(int64_t));

// Which operand a fragment holds.
enum Which : int { kA, kB, kC };

struct Pos {
  uint32_t row, col;
};

// mma.sync fragments (the ISA's tables), for element j of register r of lane `lane`, with
// `per` elements per register. groupID = lane / 4 and threadID_in_group = lane % 4:
//   A: row = groupID + 8 * (r % 2), col = (r / 2) * 4 * per + threadID_in_group * per + j
//   B: row = r * 4 * per + threadID_in_group * per + j, col = groupID
//   C, D: with i = r * per + j, row = groupID + 8 * (i / 2), col = threadID_in_group * 2 + i % 2
inline Pos MmaPos(Which which, int lane, uint32_t r, uint32_t j, uint32_t per) {
  const uint32_t g = static_cast<uint32_t>(lane) >> 2, t = static_cast<uint32_t>(lane) & 3;
  switch (which) {
    case kA:
      return {g + 8 * (r & 1), (r >> 1) * 4 * per + t * per + j};
    case kB:
      return {r * 4 * per + t * per + j, g};
    default: {
      const uint32_t i = r * per + j;
      return {g + 8 * (i >> 1), t * 2 + (i & 1)};
    }
  }
}

// The matrix (row-major, `cols` entries a row) that fragment registers `regs[0..count)` of the
// mma.sync layout hold in all 32 lanes, and the reverse for an accumulator D.
void GatherFragment(Which which, El el, uint8_t* r, const uint32_t* regs, uint32_t count,
                    uint32_t cols, double* out);
void ScatterFragment(El el, uint8_t* r, const uint32_t* regs, uint32_t count, uint32_t cols,
                     const double* D, bool sat);

inline constexpr uint32_t kMaxA = 16 * 256, kMaxB = 256 * 8, kMaxC = 16 * 16;

// D = A * B + C on matrices in row-major arrays (s.m x s.k, s.k x s.n, s.m x s.n), each element
// in one chain over k in order, starting from C. flags bit1: .xor.popc, bit2: .and.popc.
void Multiply(const MmaDesc& s, uint8_t flags, const double* A, const double* B, const double* C,
              double* D);

// A fragment operand: a brace list of `count` registers, or one register.
Status FragmentRegs(LowerCtx& c, const ast::Operand& o, uint32_t count, Ty t, bool dst,
                    std::vector<uint32_t>* out);
// Parses ".mMnNkK" among the modifiers.
bool ParseShape(const LowerCtx& c, uint32_t* m, uint32_t* n, uint32_t* k);
// The shape (into m, n, k as written, and s) and the four element types (d, a, b, c) of an
// mma or mma.sp; false when either is missing.
bool ParseMmaDesc(const LowerCtx& c, MmaDesc* s, uint32_t* m, uint32_t* n, uint32_t* k);
// Whether the modifiers name layout `first` before layout `second` (".row.col").
bool Layouts(const LowerCtx& c, const char* first, const char* second);
// Integer and single-bit forms: flags for .satfinite (bit0) and the b1 operation.
StatusOr<uint8_t> IntFlags(LowerCtx& c, El a);
// An mma-like instruction (not yet emitted) with its register list: nA, nB, nC, nD, then the
// registers of a, b, c and d (operands 1, 2, 3 and 0) in in.aux.
StatusOr<Inst> MmaInst(LowerCtx& c, ExecFn fn, const MmaDesc& s, uint8_t flags, uint32_t na,
                       uint32_t nb, uint32_t nc, uint32_t nd);

// mma.sp and mma.sp::ordered_metadata (ops_mma_sp.cc); LowerMmaSync hands them over.
Status LowerMmaSparse(LowerCtx& c);

}  // namespace pvgpu::ptx::mma
