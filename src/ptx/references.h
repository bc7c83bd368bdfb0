// Texture and surface references (the legacy `.texref`/`.surfref` module variables) as objects.
//
// A kernel of CUDA's legacy texture API names a texture by a module variable, `.global .texref
// t;`, bound from the host with cuTexRefSet*; texture objects replaced it (CUDA 5), and the
// engine implements the object form only. This pass turns the reference form into the object
// form, in the PTX text, before the text is parsed:
//
//   .global .texref t;                    ->  .global .align 8 .u64 __pvgpu_texref_t;
//   @p tex.2d.v4.f32.f32 {...}, [t, {..}]; ->  { .reg .b64 %__pvgpu_ref;
//                                               ld.global.u64 %__pvgpu_ref, [__pvgpu_texref_t];
//                                               @p tex.2d.v4.f32.f32 {...}, [%__pvgpu_ref, {..}]; }
//
// (the second on one line, so that every line number of the module stays what it was), and the
// same for `.surfref` (`__pvgpu_surfref_`) with suld, sust, sured and suq, and for the deprecated
// `.tex .u32 t;` / `.tex .u64 t;` spelling of a texture reference. The variable then holds the
// handle of the object the guest library made for the reference's binding (cuTexRefSetArray and
// its siblings; docs/textures.md), which it writes there before a launch, like any global. A
// kernel using an unbound reference reads handle 0, which names no object and faults.
//
// Both adapters load the rewritten text: the cpu adapter's engine and the cuda adapter, which
// gives it to the host's driver instead of the image (whose machine code, if any, would read
// the driver's own, unbound, references).
//
// Left as they are, so that the engine refuses them with its message: references with
// initializers or in arrays, `.samplerref` (the independent mode's separate samplers) and
// references passed as kernel parameters.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace pvgpu::ptx {

// The prefixes of the variables that stand for references: the guest finds `t`'s as
// kTextureReferencePrefix + "t" among the module's globals.
inline constexpr std::string_view kTextureReferencePrefix = "__pvgpu_texref_";
inline constexpr std::string_view kSurfaceReferencePrefix = "__pvgpu_surfref_";

// The text with its references rewritten, or nullopt when it declares none (the common case,
// which costs one scan for the two words). Errors are the lexer's (kInvalidPtx), which the
// parser would report anyway.
StatusOr<std::optional<std::string>> RewriteReferences(std::string_view ptx);

// For a host driver's JIT (the cuda adapter): the text with its declaration of the device
// runtime's `cudaGraphSetConditional(handle, value)` replaced by a definition that stores
// `value` at `handle`, which in pvgpu is the address of the conditional node's 4-byte value
// (the guest's conditional graph nodes; the cpu adapter's engine has the same function built
// in). NVIDIA's own takes the driver's handles, which pvgpu's are not. Lines keep their numbers.
// nullopt when the text declares no such function.
StatusOr<std::optional<std::string>> DefineGraphSetConditional(std::string_view ptx);

}  // namespace pvgpu::ptx
