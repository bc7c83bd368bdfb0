// Tokenizer for PTX text. Tokens keep their line and column so that every load error can name
// the exact place (the JIT error log contract in ptx.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace pvgpu::ptx {

enum class TokKind : uint8_t {
  kIdent,     // foo, %r1, $L__BB0_2, _Z3fooi, %tid
  kDotIdent,  // .reg, .b32, .x (text includes the dot)
  kNumber,    // 12, -, 0x1F, 0f3F800000, 0d..., 1.5 (sign is a separate token)
  kString,    // "nounroll" (text excludes the quotes)
  kPunct,     // one of , ; : { } [ ] ( ) < > + - ! | @ =
  kEnd,
};

struct Token {
  TokKind kind = TokKind::kEnd;
  std::string_view text;
  int line = 0;
  int col = 0;
  bool Is(char c) const { return kind == TokKind::kPunct && text.size() == 1 && text[0] == c; }
  bool kind_is(TokKind k) const { return kind == k; }
  bool IsDot(std::string_view s) const { return kind == TokKind::kDotIdent && text == s; }
};

// Splits `src` into tokens (comments removed). The views point into `src`.
StatusOr<std::vector<Token>> Tokenize(std::string_view src);

// "line L, column C: reason" as kInvalidPtx.
Status PtxError(int line, int col, const std::string& reason);
inline Status PtxErrorAt(int line, int col, const std::string& reason) {
  return PtxError(line, col, reason);
}

}  // namespace pvgpu::ptx
