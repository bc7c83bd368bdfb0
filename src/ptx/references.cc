#include "ptx/references.h"

#include <algorithm>
#include <map>
#include <vector>

#include "ptx/lexer.h"

namespace pvgpu::ptx {

namespace {

// One replacement of the text's bytes [pos, pos + len).
struct Edit {
  size_t pos = 0;
  size_t len = 0;
  std::string text;
};

// A statement: tokens [first, last] (last is its ';', or the '{' that opens a function body),
// at module scope or inside a function.
struct Statement {
  size_t first = 0;
  size_t last = 0;
  bool module_scope = true;
};

bool IsOpcodeOfReference(std::string_view op) {
  return op == "tex" || op == "tld4" || op == "txq" || op == "suld" || op == "sust" ||
         op == "sured" || op == "suq";
}

// Splits the tokens into statements. Blocks ('{' and '}' at the start of a statement), labels,
// .loc/.file lines and .section contents are not statements.
std::vector<Statement> Statements(const std::vector<Token>& t) {
  std::vector<Statement> out;
  int depth = 0;
  size_t i = 0;
  const size_t n = t.size();
  while (i < n && t[i].kind != TokKind::kEnd) {
    if (t[i].Is('{')) {
      ++depth;
      ++i;
      continue;
    }
    if (t[i].Is('}')) {
      depth = std::max(0, depth - 1);
      ++i;
      continue;
    }
    if (t[i].kind == TokKind::kIdent && i + 1 < n && t[i + 1].Is(':')) {
      i += 2;
      continue;
    }
    // Directives that end at the end of their line, without a ';'.
    if (t[i].IsDot(".loc") || t[i].IsDot(".file") || t[i].IsDot(".version") ||
        t[i].IsDot(".target") || t[i].IsDot(".address_size")) {
      const int line = t[i].line;
      while (i < n && t[i].kind != TokKind::kEnd && t[i].line == line) ++i;
      continue;
    }
    if (t[i].IsDot(".section")) {
      while (i < n && t[i].kind != TokKind::kEnd && !t[i].Is('{')) ++i;
      int braces = 0;
      for (; i < n && t[i].kind != TokKind::kEnd; ++i) {
        if (t[i].Is('{')) ++braces;
        if (t[i].Is('}') && --braces == 0) {
          ++i;
          break;
        }
      }
      continue;
    }
    Statement s;
    s.first = i;
    s.module_scope = depth == 0;
    bool function = false;
    int parens = 0;
    for (; i < n && t[i].kind != TokKind::kEnd; ++i) {
      if (t[i].IsDot(".entry") || t[i].IsDot(".func")) function = true;
      if (t[i].Is('(')) ++parens;
      if (t[i].Is(')')) --parens;
      if (t[i].Is(';')) break;
      // A function's body opens its statement's end; an initializer's braces follow '='.
      if (s.module_scope && function && parens == 0 && t[i].Is('{')) break;
    }
    if (i >= n || t[i].kind == TokKind::kEnd) break;
    s.last = i;
    out.push_back(s);
    if (t[i].Is('{')) {
      ++depth;
    }
    ++i;
  }
  return out;
}

size_t Offset(std::string_view src, const Token& token) {
  return static_cast<size_t>(token.text.data() - src.data());
}

}  // namespace

StatusOr<std::optional<std::string>> RewriteReferences(std::string_view ptx) {
  if (ptx.find(".tex") == std::string_view::npos &&
      ptx.find(".surfref") == std::string_view::npos) {
    return std::optional<std::string>();
  }
  PVGPU_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(ptx));
  const std::vector<Statement> statements = Statements(tokens);

  std::vector<Edit> edits;
  std::map<std::string_view, std::string_view> refs;  // name -> its variable's prefix
  // Declarations: [.extern|.visible|.weak]* .global .texref a, b;  or  .tex .u32 a;
  for (const Statement& s : statements) {
    if (!s.module_scope) continue;
    size_t kind = s.first;
    while (kind < s.last && tokens[kind].kind == TokKind::kDotIdent &&
           !tokens[kind].IsDot(".texref") && !tokens[kind].IsDot(".surfref") &&
           !tokens[kind].IsDot(".tex")) {
      ++kind;
    }
    if (kind >= s.last || tokens[kind].kind != TokKind::kDotIdent) continue;
    const Token& k = tokens[kind];
    size_t names = kind + 1;
    std::string_view prefix = kTextureReferencePrefix;
    Edit replace_kind{Offset(ptx, k), k.text.size(), ".align 8 .u64"};
    if (k.IsDot(".tex")) {
      // The deprecated state space: `.tex .u32 a;` is `.global .texref a;`.
      if (names >= s.last || tokens[names].kind != TokKind::kDotIdent) continue;
      const Token& type = tokens[names];
      replace_kind.len = Offset(ptx, type) + type.text.size() - replace_kind.pos;
      replace_kind.text = ".global .align 8 .u64";
      ++names;
    } else {
      bool global = false;
      for (size_t j = s.first; j < kind; ++j) global = global || tokens[j].IsDot(".global");
      if (!global) continue;  // a kernel parameter (the independent mode): left to the engine
      if (k.IsDot(".surfref")) prefix = kSurfaceReferencePrefix;
    }
    // Only plain names, separated by commas: initializers and arrays stay for the engine to
    // refuse.
    bool plain = names < s.last;
    for (size_t j = names; j < s.last && plain; ++j) {
      const bool name_slot = (j - names) % 2 == 0;
      plain = name_slot ? tokens[j].kind == TokKind::kIdent : tokens[j].Is(',');
    }
    if (!plain || (s.last - names) % 2 == 0) continue;
    // One declaration per name (the engine reads one name a declaration), all on the
    // statement's line, followed by the newlines the statement spanned.
    const size_t begin = Offset(ptx, tokens[s.first]);
    const size_t end = Offset(ptx, tokens[s.last]) + 1;
    std::string head(ptx.substr(begin, replace_kind.pos - begin));
    head += replace_kind.text;
    head += ptx.substr(replace_kind.pos + replace_kind.len,
                       Offset(ptx, tokens[names]) - replace_kind.pos - replace_kind.len);
    Edit declaration{begin, end - begin, ""};
    for (size_t j = names; j < s.last; j += 2) {
      refs[tokens[j].text] = prefix;
      if (j != names) declaration.text += ' ';
      declaration.text += head;
      declaration.text += prefix;
      declaration.text += tokens[j].text;
      declaration.text += ';';
    }
    const std::string_view spanned = ptx.substr(begin, end - begin);
    declaration.text.append(std::count(spanned.begin(), spanned.end(), '\n'), '\n');
    edits.push_back(std::move(declaration));
  }
  if (refs.empty()) return std::optional<std::string>();

  // Uses: the first operand of a texture or surface instruction.
  for (const Statement& s : statements) {
    if (s.module_scope) continue;
    size_t op = s.first;
    if (tokens[op].Is('@')) {
      ++op;
      if (op < s.last && tokens[op].Is('!')) ++op;
      ++op;  // the predicate
    }
    if (op >= s.last || tokens[op].kind != TokKind::kIdent ||
        !IsOpcodeOfReference(tokens[op].text)) {
      continue;
    }
    size_t open = op + 1;
    while (open < s.last && !tokens[open].Is('[')) ++open;
    if (open + 1 >= s.last || tokens[open + 1].kind != TokKind::kIdent) continue;
    const Token& name = tokens[open + 1];
    auto ref = refs.find(name.text);
    if (ref == refs.end()) continue;
    std::string load = "{ .reg .b64 %__pvgpu_ref; ld.global.u64 %__pvgpu_ref, [";
    load += ref->second;
    load += name.text;
    load += "]; ";
    edits.push_back({Offset(ptx, tokens[s.first]), 0, std::move(load)});
    edits.push_back({Offset(ptx, name), name.text.size(), "%__pvgpu_ref"});
    edits.push_back({Offset(ptx, tokens[s.last]) + 1, 0, " }"});
  }

  std::stable_sort(edits.begin(), edits.end(),
                   [](const Edit& a, const Edit& b) { return a.pos < b.pos; });
  std::string out;
  out.reserve(ptx.size() + edits.size() * 48);
  size_t at = 0;
  for (const Edit& e : edits) {
    out.append(ptx.substr(at, e.pos - at));
    out += e.text;
    at = e.pos + e.len;
  }
  out.append(ptx.substr(at));
  return std::optional<std::string>(std::move(out));
}

StatusOr<std::optional<std::string>> DefineGraphSetConditional(std::string_view ptx) {
  constexpr std::string_view kName = "cudaGraphSetConditional";
  if (ptx.find(kName) == std::string_view::npos) return std::optional<std::string>();
  PVGPU_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(ptx));
  for (const Statement& s : Statements(tokens)) {
    if (!s.module_scope || !tokens[s.last].Is(';')) continue;
    bool external = false, function = false;
    size_t name = s.first;
    for (; name < s.last && tokens[name].kind == TokKind::kDotIdent; ++name) {
      external = external || tokens[name].IsDot(".extern");
      function = function || tokens[name].IsDot(".func");
    }
    if (!external || !function || name >= s.last || tokens[name].text != kName) continue;
    const size_t begin = Offset(ptx, tokens[s.first]);
    const size_t end = Offset(ptx, tokens[s.last]) + 1;
    const std::string_view declaration = ptx.substr(begin, end - begin);
    std::string out(ptx.substr(0, begin));
    out +=
        ".func cudaGraphSetConditional(.param .b64 handle, .param .b32 value) { .reg .b64 "
        "%__pvgpu_h; .reg .b32 %__pvgpu_v; ld.param.b64 %__pvgpu_h, [handle]; ld.param.b32 "
        "%__pvgpu_v, [value]; st.u32 [%__pvgpu_h], %__pvgpu_v; ret; }";
    out.append(std::count(declaration.begin(), declaration.end(), '\n'), '\n');
    out.append(ptx.substr(end));
    return std::optional<std::string>(std::move(out));
  }
  return std::optional<std::string>();
}

}  // namespace pvgpu::ptx
