// Recursive-descent parser for the PTX subset nvcc emits (see ast.h for the tree).
#pragma once

#include <string_view>

#include "common/status.h"
#include "ptx/ast.h"

namespace pvgpu::ptx {

StatusOr<ast::Module> ParseModule(std::string_view text);

// Parses a numeric literal token: integers (decimal, 0x, 0b?, octal 0..), 0f/0d hex floats and
// decimal floats. Sets *kind to kInt, kF32 or kF64.
bool ParseNumberLiteral(std::string_view text, ast::Operand::Kind* kind, uint64_t* bits,
                        bool* decimal_float);

}  // namespace pvgpu::ptx
