#include "ptx/lexer.h"

#include <cctype>

namespace pvgpu::ptx {
namespace {

bool IsIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
}
bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

}  // namespace

Status PtxError(int line, int col, const std::string& reason) {
  return Error(Code::kInvalidPtx,
               "line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + reason);
}

StatusOr<std::vector<Token>> Tokenize(std::string_view src) {
  std::vector<Token> out;
  out.reserve(src.size() / 4);
  int line = 1;
  size_t line_start = 0;
  size_t i = 0;
  const size_t n = src.size();
  auto col = [&](size_t pos) { return static_cast<int>(pos - line_start) + 1; };
  while (i < n) {
    char c = src[i];
    if (c == '\n') {
      ++line;
      line_start = ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      int start_line = line, start_col = col(i);
      i += 2;
      while (i + 1 < n && !(src[i] == '*' && src[i + 1] == '/')) {
        if (src[i] == '\n') {
          ++line;
          line_start = i + 1;
        }
        ++i;
      }
      if (i + 1 >= n) return PtxError(start_line, start_col, "unterminated /* comment");
      i += 2;
      continue;
    }
    Token t;
    t.line = line;
    t.col = col(i);
    size_t start = i;
    if (c == '"') {
      ++i;
      while (i < n && src[i] != '"' && src[i] != '\n') ++i;
      if (i >= n || src[i] != '"') return PtxError(t.line, t.col, "unterminated string");
      t.kind = TokKind::kString;
      t.text = src.substr(start + 1, i - start - 1);
      ++i;
    } else if (c == '.' && i + 1 < n &&
               (std::isalnum(static_cast<unsigned char>(src[i + 1])) || src[i + 1] == '_')) {
      ++i;
      // ".shared::cta" style qualifiers stay one token.
      while (i < n && (IsIdentChar(src[i]) || (src[i] == ':' && i + 2 < n && src[i + 1] == ':' &&
                                               IsIdentChar(src[i + 2]))))
        i += src[i] == ':' ? 2 : 1;
      t.kind = TokKind::kDotIdent;
      t.text = src.substr(start, i - start);
    } else if (IsIdentStart(c)) {
      ++i;
      while (i < n && IsIdentChar(src[i])) ++i;
      t.kind = TokKind::kIdent;
      t.text = src.substr(start, i - start);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      // Numbers: decimal, 0x hex, 0f/0d hex floats, decimal floats with '.' and exponent.
      ++i;
      while (i < n) {
        char d = src[i];
        if (std::isalnum(static_cast<unsigned char>(d)) || d == '.') {
          ++i;
        } else if ((d == '+' || d == '-') && (src[i - 1] == 'e' || src[i - 1] == 'E') &&
                   !(src[start] == '0' && start + 1 < n &&
                     (src[start + 1] == 'x' || src[start + 1] == 'X' || src[start + 1] == 'f' ||
                      src[start + 1] == 'F' || src[start + 1] == 'd' || src[start + 1] == 'D'))) {
          ++i;
        } else {
          break;
        }
      }
      t.kind = TokKind::kNumber;
      t.text = src.substr(start, i - start);
    } else if (std::string_view(",;:{}[]()<>+-!|@=").find(c) != std::string_view::npos) {
      ++i;
      t.kind = TokKind::kPunct;
      t.text = src.substr(start, 1);
    } else {
      return PtxError(t.line, t.col, std::string("unexpected character '") + c + "'");
    }
    out.push_back(t);
  }
  Token end;
  end.kind = TokKind::kEnd;
  end.line = line;
  end.col = col(i);
  out.push_back(end);
  return out;
}

}  // namespace pvgpu::ptx
