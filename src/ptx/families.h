// Entry points that one instruction family hands to another at lowering time.
#pragma once

#include "ptx/lower.h"
#include "ptx/types.h"

namespace pvgpu::ptx {

enum class Round : uint8_t { kNone, kRn, kRz, kRm, kRp, kRni, kRzi, kRmi, kRpi, kRna };
Round RoundMod(const LowerCtx& c);

// f16/bf16 (and x2) forms of add/sub/mul/fma/neg/abs/min/max, ex2.approx, tanh.approx
// (ops_half.cc).
Status LowerHalfArith(LowerCtx& c);
// cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b, the scalar .f16 / .bf16 forms with
// .relu or .satfinite, and cvt.pack.sat (ops_half.cc).
Status LowerCvtPackHalf(LowerCtx& c);
// One f16 (bf: bf16) add ('a'), min ('n') or max ('x') of the low 16 bits of a and b, rounded
// to nearest (ops_half.cc): the half-precision atomics.
uint32_t HalfBinary(char op, bool bf, uint32_t a, uint32_t b);
// Float add/sub/mul/fma/div/sqrt/rcp with a directed rounding mode (ops_round.cc).
// op: 'a' add, 's' sub, 'm' mul, 'f' fma, 'd' div, 'q' sqrt, 'r' rcp.
Status LowerRounded(LowerCtx& c, char op, Ty t, Round rm, bool ftz, bool sat, int nsrc);
// Conversions with a rounding mode (ops_round.cc).
ExecFn CvtHandler(Ty dst, Ty src, Round rm, bool ftz, bool sat);

// AVX2/FMA handler for fma.rn.{f32,f64} without ftz/sat, or nullptr (ops_simd.cc).
ExecFn SimdFma(Ty t);
// Loads 32 4-byte values from base + off[i] (off < 2^31), with AVX2 gathers when available.
using GatherFn = void (*)(const uint8_t* base, const uint32_t* off, uint32_t* dst);
extern const GatherFn kGather32;
// ld.shared.b32 [32-bit reg + imm] fast path for full warps; false means "not applicable".
using FastLdFn = bool (*)(const Inst& in, Warp& w, uint32_t m);
FastLdFn FastSharedLd32();
// Packs 32 per-lane 0/-1 words into a mask (ops_simd.cc).
uint32_t PackLaneMask(const int32_t* v);

// The memory order a load, store or atomic asks for (.acquire, .release, .acq_rel; .sc and
// fences are sequentially consistent). Blocks of a launch run on different host threads, so
// an acquire or release becomes a host fence around the access (ops_move.cc): before a release,
// after an acquire. Call EmitReleaseFence before resolving the instruction's operands and
// EmitAcquireFence after emitting it.
void EmitReleaseFence(LowerCtx& c);
void EmitAcquireFence(LowerCtx& c);

}  // namespace pvgpu::ptx
