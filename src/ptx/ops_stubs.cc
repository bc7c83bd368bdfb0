#include "ptx/lower.h"
namespace pvgpu::ptx {
void RegisterBits(OpTable&) {}
void RegisterWarp(OpTable&) {}
void RegisterAtomic(OpTable&) {}
void RegisterMath(OpTable&) {}
void RegisterHalf(OpTable&) {}
Status LowerHalfArith(LowerCtx& c) { return c.Unsupported(); }
}  // namespace pvgpu::ptx
