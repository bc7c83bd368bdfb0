#include "ptx/types.h"

namespace pvgpu::ptx {
namespace {
struct TypeRow {
  const char* name;
  Ty ty;
  uint32_t size;
};
constexpr TypeRow kTypes[] = {
    {".pred", Ty::kPred, 0},   {".b8", Ty::kB8, 1},     {".b16", Ty::kB16, 2},
    {".b32", Ty::kB32, 4},     {".b64", Ty::kB64, 8},   {".b128", Ty::kB128, 16},
    {".u8", Ty::kU8, 1},       {".u16", Ty::kU16, 2},   {".u32", Ty::kU32, 4},
    {".u64", Ty::kU64, 8},     {".s8", Ty::kS8, 1},     {".s16", Ty::kS16, 2},
    {".s32", Ty::kS32, 4},     {".s64", Ty::kS64, 8},   {".f16", Ty::kF16, 2},
    {".f16x2", Ty::kF16x2, 4}, {".bf16", Ty::kBF16, 2}, {".bf16x2", Ty::kBF16x2, 4},
    {".f32", Ty::kF32, 4},     {".f64", Ty::kF64, 8},
};
}  // namespace

Ty ParseType(std::string_view s) {
  for (const auto& r : kTypes)
    if (s == r.name) return r.ty;
  return Ty::kNone;
}

const char* TypeName(Ty t) {
  for (const auto& r : kTypes)
    if (r.ty == t) return r.name;
  return "?";
}

uint32_t TypeSize(Ty t) {
  for (const auto& r : kTypes)
    if (r.ty == t) return r.size;
  return 0;
}

}  // namespace pvgpu::ptx
