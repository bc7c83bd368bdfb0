#include "ptx/parser.h"

#include <cstdlib>
#include <cstring>

#include "ptx/lexer.h"
#include "ptx/references.h"

namespace pvgpu::ptx {
namespace {

using ast::Operand;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseHex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = HexDigit(c);
    if (d < 0) return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

ast::Space SpaceOf(std::string_view dot) {
  if (dot == ".reg") return ast::Space::kReg;
  if (dot == ".global") return ast::Space::kGlobal;
  if (dot == ".const") return ast::Space::kConst;
  if (dot == ".shared") return ast::Space::kShared;
  if (dot == ".local") return ast::Space::kLocal;
  if (dot == ".param") return ast::Space::kParam;
  return ast::Space::kNone;
}

bool IsTypeName(std::string_view t) {
  static const char* kTypes[] = {".b8",    ".b16",  ".b32",    ".b64", ".b128", ".u8",   ".u16",
                                 ".u32",   ".u64",  ".s8",     ".s16", ".s32",  ".s64",  ".f16",
                                 ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64",  ".pred", ".tf32"};
  for (const char* k : kTypes)
    if (t == k) return true;
  return false;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  StatusOr<ast::Module> Run() {
    ast::Module m;
    while (!Peek().kind_is(TokKind::kEnd)) PVGPU_TRY(TopLevel(m));
    return m;
  }

 private:
  struct Cursor {};
  const Token& Peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  const Token& Next() {
    const Token& t = Peek();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  Status Err(const Token& t, const std::string& reason) {
    std::string near = t.kind == TokKind::kEnd ? "end of input" : "'" + std::string(t.text) + "'";
    return PtxError(t.line, t.col, reason + " (near " + near + ")");
  }
  Status Expect(char c) {
    if (!Peek().Is(c)) return Err(Peek(), std::string("expected '") + c + "'");
    Next();
    return Status::Ok();
  }
  bool Accept(char c) {
    if (Peek().Is(c)) {
      Next();
      return true;
    }
    return false;
  }
  StatusOr<uint64_t> ExpectUint() {
    const Token& t = Peek();
    Operand::Kind k;
    uint64_t bits;
    bool dec;
    if (t.kind != TokKind::kNumber || !ParseNumberLiteral(t.text, &k, &bits, &dec) ||
        k != Operand::Kind::kInt)
      return Err(t, "expected an integer");
    Next();
    return bits;
  }
  void SkipToSemicolon() {
    while (!Peek().kind_is(TokKind::kEnd) && !Peek().Is(';')) Next();
    Accept(';');
  }
  // Skips the rest of a line-oriented directive such as .loc / .file.
  void SkipLine(int line) {
    while (!Peek().kind_is(TokKind::kEnd) && Peek().line == line) Next();
  }

  Status TopLevel(ast::Module& m) {
    const Token& t = Peek();
    if (t.kind != TokKind::kDotIdent) return Err(t, "expected a directive");
    if (t.text == ".version") {
      Next();
      m.version = std::string(Next().text);
      return Status::Ok();
    }
    if (t.text == ".target") {
      Next();
      m.target = std::string(Next().text);
      while (Accept(',')) Next();
      return Status::Ok();
    }
    if (t.text == ".address_size") {
      Next();
      PVGPU_ASSIGN_OR_RETURN(uint64_t v, ExpectUint());
      if (v != 64 && v != 32) return Err(t, "bad .address_size");
      m.address_size = static_cast<uint32_t>(v);
      return Status::Ok();
    }
    if (t.text == ".file" || t.text == ".loc") {
      Next();
      SkipLine(t.line);
      return Status::Ok();
    }
    if (t.text == ".pragma") {
      SkipToSemicolon();
      return Status::Ok();
    }
    if (t.text == ".section") {
      // Debug sections: skip the braced body.
      Next();
      while (!Peek().kind_is(TokKind::kEnd) && !Peek().Is('{')) Next();
      int depth = 0;
      do {
        if (Peek().Is('{')) ++depth;
        if (Peek().Is('}')) --depth;
        Next();
      } while (depth > 0 && !Peek().kind_is(TokKind::kEnd));
      return Status::Ok();
    }
    bool is_extern = false, is_visible = false, is_weak = false;
    while (Peek().kind == TokKind::kDotIdent &&
           (Peek().text == ".visible" || Peek().text == ".extern" || Peek().text == ".weak" ||
            Peek().text == ".common")) {
      if (Peek().text == ".extern") is_extern = true;
      if (Peek().text == ".visible" || Peek().text == ".weak") is_visible = true;
      // .common variables merge like weak ones when modules are linked.
      if (Peek().text == ".weak" || Peek().text == ".common") is_weak = true;
      Next();
    }
    const Token& d = Peek();
    if (d.IsDot(".entry") || d.IsDot(".func")) {
      PVGPU_TRY(ParseFunction(m, is_extern, is_visible));
      m.functions.back().is_weak = is_weak;
      return Status::Ok();
    }
    ast::Space sp = SpaceOf(d.text);
    if (sp == ast::Space::kGlobal || sp == ast::Space::kConst || sp == ast::Space::kShared) {
      ast::VarDecl v;
      PVGPU_TRY(ParseDecl(v, /*allow_init=*/true));
      v.is_extern = is_extern;
      v.is_visible = is_visible;
      v.is_weak = is_weak;
      PVGPU_TRY(Expect(';'));
      m.globals.push_back(std::move(v));
      return Status::Ok();
    }
    return Err(d, "unsupported module-level directive");
  }

  // .space [.align N] [.vN] .type name[<N>|[dims]] [= init]
  Status ParseDecl(ast::VarDecl& v, bool allow_init) {
    const Token& st = Next();
    v.space = SpaceOf(st.text);
    v.line = st.line;
    v.col = st.col;
    // Kernel parameter attributes (.param .u64 .ptr [.space] [.align N] p): the state space and
    // alignment of the memory the pointer points to, which change nothing about the parameter
    // itself: it keeps its type's size and natural alignment.
    bool pointer_attributes = false;
    while (Peek().kind == TokKind::kDotIdent) {
      const Token& q = Next();
      if (q.text == ".align") {
        PVGPU_ASSIGN_OR_RETURN(uint64_t a, ExpectUint());
        if (a == 0 || (a & (a - 1)) || a > 4096) return Err(q, "bad alignment");
        if (!pointer_attributes) v.align = static_cast<uint32_t>(a);
      } else if (q.text == ".v2" || q.text == ".v4" || q.text == ".v8") {
        v.vector = static_cast<uint32_t>(q.text[2] - '0');
      } else if (q.text == ".ptr") {
        if (v.space != ast::Space::kParam) return Err(q, ".ptr outside a parameter declaration");
        pointer_attributes = true;
      } else if (pointer_attributes && (q.text == ".global" || q.text == ".const" ||
                                        q.text == ".shared" || q.text == ".local")) {
        // the pointee's state space: a hint for the compiler
      } else if (IsTypeName(q.text)) {
        v.type = std::string(q.text);
      } else if (q.text == ".attribute" || q.text == ".unified") {
        if (Accept('(')) {
          while (!Peek().Is(')') && !Peek().kind_is(TokKind::kEnd)) Next();
          Accept(')');
        }
      } else {
        return Err(q, "unexpected qualifier in declaration");
      }
    }
    if (v.type.empty()) return Err(Peek(), "declaration without a type");
    const Token& name = Next();
    if (name.kind != TokKind::kIdent) return Err(name, "expected a name");
    v.name = std::string(name.text);
    if (Accept('<')) {
      PVGPU_ASSIGN_OR_RETURN(uint64_t n, ExpectUint());
      if (n > (1u << 20)) return Err(name, "register range too large");
      v.is_range = true;
      v.range_count = static_cast<uint32_t>(n);
      PVGPU_TRY(Expect('>'));
    }
    while (Accept('[')) {
      v.has_dims = true;
      if (Accept(']')) {
        v.dims.push_back(0);
        continue;
      }
      PVGPU_ASSIGN_OR_RETURN(uint64_t n, ExpectUint());
      if (n > (uint64_t{1} << 40)) return Err(name, "array too large");
      v.dims.push_back(n);
      PVGPU_TRY(Expect(']'));
    }
    if (Peek().Is('=')) {
      if (!allow_init) return Err(Peek(), "initializer not allowed here");
      Next();
      v.has_init = true;
      PVGPU_TRY(ParseInit(v, 0));
    }
    return Status::Ok();
  }

  Status ParseInit(ast::VarDecl& v, int depth) {
    if (depth > 8) return Err(Peek(), "initializer nested too deeply");
    if (Accept('{')) {
      if (!Peek().Is('}')) {
        do {
          PVGPU_TRY(ParseInit(v, depth + 1));
        } while (Accept(','));
      }
      return Expect('}');
    }
    ast::VarDecl::Init in;
    bool neg = Accept('-');
    const Token& t = Peek();
    if (t.kind == TokKind::kNumber) {
      Operand::Kind k;
      bool dec;
      if (!ParseNumberLiteral(t.text, &k, &in.bits, &dec)) return Err(t, "bad number");
      Next();
      if (dec) {
        in.decimal_float = true;
        in.fvalue = std::strtod(std::string(t.text).c_str(), nullptr);
        if (neg) in.fvalue = -in.fvalue;
      } else if (neg) {
        if (k == Operand::Kind::kInt)
          in.bits = ~in.bits + 1;
        else if (k == Operand::Kind::kF32)
          in.bits ^= 0x80000000u;
        else
          in.bits ^= uint64_t{1} << 63;
      }
    } else if (t.kind == TokKind::kIdent) {
      Next();
      in.is_symbol = true;
      if (t.text == "generic" && Peek().Is('(')) {
        Next();
        const Token& s = Next();
        if (s.kind != TokKind::kIdent) return Err(s, "expected a symbol");
        in.symbol = std::string(s.text);
        in.generic = true;
        PVGPU_TRY(Expect(')'));
      } else {
        in.symbol = std::string(t.text);
      }
      if (Peek().Is('+') || Peek().Is('-')) {
        bool minus = Next().Is('-');
        PVGPU_ASSIGN_OR_RETURN(uint64_t a, ExpectUint());
        in.addend = minus ? -static_cast<int64_t>(a) : static_cast<int64_t>(a);
      }
    } else {
      return Err(t, "bad initializer");
    }
    v.init.push_back(std::move(in));
    return Status::Ok();
  }

  Status ParseParamList(std::vector<ast::VarDecl>& out) {
    PVGPU_TRY(Expect('('));
    if (Accept(')')) return Status::Ok();
    do {
      if (!Peek().IsDot(".param") && !Peek().IsDot(".reg")) return Err(Peek(), "expected .param");
      ast::VarDecl v;
      PVGPU_TRY(ParseDecl(v, false));
      out.push_back(std::move(v));
    } while (Accept(','));
    return Expect(')');
  }

  Status ParseFunction(ast::Module& m, bool is_extern, bool is_visible) {
    ast::Function f;
    const Token& kw = Next();
    f.is_entry = kw.text == ".entry";
    f.is_extern = is_extern;
    f.is_visible = is_visible;
    f.line = kw.line;
    f.col = kw.col;
    if (!f.is_entry && Peek().Is('(')) PVGPU_TRY(ParseParamList(f.rets));
    const Token& name = Next();
    if (name.kind != TokKind::kIdent) return Err(name, "expected a function name");
    f.name = std::string(name.text);
    if (Peek().Is('(')) PVGPU_TRY(ParseParamList(f.params));
    // Performance directives.
    while (Peek().kind == TokKind::kDotIdent) {
      const Token& d = Next();
      if (d.text == ".maxntid" || d.text == ".reqntid") {
        uint32_t* dst = d.text == ".maxntid" ? f.maxntid : f.reqntid;
        dst[1] = dst[2] = 1;
        for (int i = 0; i < 3; ++i) {
          PVGPU_ASSIGN_OR_RETURN(uint64_t v, ExpectUint());
          if (v == 0 || v > 1024) return Err(d, "bad thread count");
          dst[i] = static_cast<uint32_t>(v);
          if (!Accept(',')) break;
        }
      } else if (d.text == ".minnctapersm" || d.text == ".maxnreg" || d.text == ".maxnctapersm" ||
                 d.text == ".maxclusterrank") {
        PVGPU_TRY(ExpectUint().status());
      } else if (d.text == ".reqnctapercluster") {
        do {
          PVGPU_TRY(ExpectUint().status());
        } while (Accept(','));
      } else if (d.text == ".noreturn" || d.text == ".explicitcluster") {
      } else if (d.text == ".pragma") {
        SkipToSemicolon();
      } else {
        return Err(d, "unsupported function directive");
      }
    }
    if (Accept(';')) {
      m.functions.push_back(std::move(f));
      return Status::Ok();
    }
    if (!Peek().Is('{')) return Err(Peek(), "expected function body");
    f.has_body = true;
    PVGPU_TRY(ParseBody(f));
    m.functions.push_back(std::move(f));
    return Status::Ok();
  }

  Status ParseBody(ast::Function& f) {
    int depth = 0;
    do {
      const Token& t = Peek();
      ast::Statement s;
      s.line = t.line;
      s.col = t.col;
      if (t.kind_is(TokKind::kEnd)) return Err(t, "unterminated function body");
      if (t.Is('{')) {
        Next();
        ++depth;
        if (depth > 64) return Err(t, "blocks nested too deeply");
        s.kind = ast::Statement::Kind::kOpen;
        f.body.push_back(std::move(s));
        continue;
      }
      if (t.Is('}')) {
        Next();
        --depth;
        s.kind = ast::Statement::Kind::kClose;
        f.body.push_back(std::move(s));
        continue;
      }
      if (t.kind == TokKind::kIdent && Peek(1).Is(':')) {
        Next();
        Next();
        if (Peek().IsDot(".callprototype") || Peek().IsDot(".calltargets")) {
          SkipToSemicolon();
          continue;
        }
        if (Peek().IsDot(".branchtargets")) {
          Next();
          std::vector<Operand> labels;
          do {
            const Token& l = Next();
            if (l.kind != TokKind::kIdent) return Err(l, "expected a label in .branchtargets");
            Operand o;
            o.kind = Operand::Kind::kSymbol;
            o.name = std::string(l.text);
            o.line = l.line;
            o.col = l.col;
            labels.push_back(std::move(o));
          } while (Accept(','));
          if (!Accept(';')) return Err(Peek(), "expected ';' after .branchtargets");
          f.branch_targets.emplace_back(std::string(t.text), std::move(labels));
          continue;
        }
        s.kind = ast::Statement::Kind::kLabel;
        s.label = std::string(t.text);
        f.body.push_back(std::move(s));
        continue;
      }
      if (t.kind == TokKind::kDotIdent) {
        if (t.text == ".loc" || t.text == ".file") {
          Next();
          SkipLine(t.line);
          continue;
        }
        if (t.text == ".pragma") {
          SkipToSemicolon();
          continue;
        }
        ast::Space sp = SpaceOf(t.text);
        if (sp == ast::Space::kNone || sp == ast::Space::kGlobal)
          return Err(t, "unsupported directive in function body");
        s.kind = ast::Statement::Kind::kDecl;
        PVGPU_TRY(ParseDecl(s.decl, sp != ast::Space::kReg && sp != ast::Space::kParam));
        // ".reg .f16 low, high;" declares several names of one type.
        std::vector<ast::Statement> more;
        while (Accept(',')) {
          const Token& n = Next();
          if (n.kind != TokKind::kIdent) return Err(n, "expected a name");
          ast::Statement extra = s;
          extra.decl.name = std::string(n.text);
          extra.decl.is_range = false;
          if (Accept('<')) {
            PVGPU_ASSIGN_OR_RETURN(uint64_t cnt, ExpectUint());
            if (cnt > (1u << 20)) return Err(n, "register range too large");
            extra.decl.is_range = true;
            extra.decl.range_count = static_cast<uint32_t>(cnt);
            PVGPU_TRY(Expect('>'));
          }
          more.push_back(std::move(extra));
        }
        PVGPU_TRY(Expect(';'));
        f.body.push_back(std::move(s));
        for (auto& e : more) f.body.push_back(std::move(e));
        continue;
      }
      s.kind = ast::Statement::Kind::kInst;
      PVGPU_TRY(ParseInstruction(s.inst));
      f.body.push_back(std::move(s));
    } while (depth > 0);
    return Status::Ok();
  }

  Status ParseInstruction(ast::Instruction& in) {
    const Token& first = Peek();
    in.line = first.line;
    in.col = first.col;
    if (Accept('@')) {
      if (Accept('!')) in.guard_neg = true;
      const Token& g = Next();
      if (g.kind != TokKind::kIdent) return Err(g, "expected a guard predicate");
      in.guard = std::string(g.text);
    }
    const Token& op = Next();
    if (op.kind != TokKind::kIdent) return Err(op, "expected an instruction");
    in.opcode = std::string(op.text);
    in.text = in.opcode;
    while (Peek().kind == TokKind::kDotIdent && Peek().line == op.line) {
      in.mods.emplace_back(Next().text);
      in.text += in.mods.back();
    }
    if (Accept(';')) return Status::Ok();
    Status st = ParseOperands(in);
    if (!st.ok()) return Status(st.code(), st.message() + " in instruction '" + in.text + "'");
    return Status::Ok();
  }

  Status ParseOperands(ast::Instruction& in) {
    do {
      Operand o;
      PVGPU_TRY(ParseOperand(o, 0));
      if (Accept('|')) {
        Operand pair;
        pair.kind = Operand::Kind::kPair;
        pair.line = o.line;
        pair.col = o.col;
        Operand second;
        PVGPU_TRY(ParseOperand(second, 0));
        pair.elems.push_back(std::move(o));
        pair.elems.push_back(std::move(second));
        o = std::move(pair);
      }
      in.ops.push_back(std::move(o));
    } while (Accept(','));
    if (!Peek().Is(';')) return Err(Peek(), "expected ';' after operands");
    Next();
    return Status::Ok();
  }

  Status ParseOperand(Operand& o, int depth) {
    const Token& t = Peek();
    o.line = t.line;
    o.col = t.col;
    if (depth > 4) return Err(t, "operand nested too deeply");
    if (t.Is('!')) {
      Next();
      PVGPU_TRY(ParseOperand(o, depth + 1));
      if (o.kind != Operand::Kind::kReg) return Err(t, "'!' applies to predicates only");
      o.neg = true;
      return Status::Ok();
    }
    if (t.Is('{') || t.Is('(')) {
      char close = t.Is('{') ? '}' : ')';
      Next();
      o.kind = Operand::Kind::kVector;
      o.name = close == ')' ? "(" : "{";
      if (Accept(close)) return Status::Ok();
      do {
        Operand e;
        PVGPU_TRY(ParseOperand(e, depth + 1));
        o.elems.push_back(std::move(e));
        if (o.elems.size() > 64) return Err(t, "too many elements");
      } while (Accept(','));
      return Expect(close);
    }
    if (t.Is('[')) {
      Next();
      o.kind = Operand::Kind::kAddress;
      const Token& b = Peek();
      if (b.kind == TokKind::kIdent) {
        Next();
        o.name = std::string(b.text);
        if (Peek().Is('+') || Peek().Is('-')) {
          bool minus = Next().Is('-');
          if (Peek().Is('-')) {
            Next();
            minus = !minus;
          }
          PVGPU_ASSIGN_OR_RETURN(uint64_t v, ExpectUint());
          o.offset = minus ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
        }
        // Texture and surface operands: [object, coordinates] or [texture, sampler, coords].
        while (Accept(',')) {
          Operand e;
          PVGPU_TRY(ParseOperand(e, depth + 1));
          o.elems.push_back(std::move(e));
          if (o.elems.size() > 2) return Err(t, "too many elements in a texture operand");
        }
      } else {
        bool minus = Accept('-');
        PVGPU_ASSIGN_OR_RETURN(uint64_t v, ExpectUint());
        o.offset = minus ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
      }
      return Expect(']');
    }
    if (t.Is('-') || t.kind == TokKind::kNumber) {
      bool neg = Accept('-');
      const Token& n = Peek();
      if (n.kind != TokKind::kNumber) return Err(n, "expected a number");
      if (!ParseNumberLiteral(n.text, &o.kind, &o.value, &o.decimal_float))
        return Err(n, "bad number");
      Next();
      if (neg) {
        if (o.kind == Operand::Kind::kInt)
          o.value = ~o.value + 1;
        else if (o.kind == Operand::Kind::kF32)
          o.value ^= 0x80000000u;
        else
          o.value ^= uint64_t{1} << 63;
      }
      return Status::Ok();
    }
    if (t.kind == TokKind::kIdent) {
      Next();
      o.name = std::string(t.text);
      if (o.name == "_") {
        o.kind = Operand::Kind::kSink;
        return Status::Ok();
      }
      if (o.name[0] == '%') {
        o.kind = Operand::Kind::kReg;
        // Special registers with components: %tid.x, %ntid.y ...
        const Token& c = Peek();
        if (c.kind == TokKind::kDotIdent && c.line == t.line &&
            c.col == t.col + (int)t.text.size() &&
            (c.text == ".x" || c.text == ".y" || c.text == ".z" || c.text == ".w")) {
          o.name += std::string(c.text);
          Next();
        }
      } else {
        o.kind = Operand::Kind::kSymbol;
        if (Peek().Is('+') && Peek(1).kind == TokKind::kNumber) {
          Next();
          PVGPU_ASSIGN_OR_RETURN(uint64_t v, ExpectUint());
          o.offset = static_cast<int64_t>(v);
        }
      }
      return Status::Ok();
    }
    return Err(t, "expected an operand");
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
};

}  // namespace

bool ParseNumberLiteral(std::string_view s, ast::Operand::Kind* kind, uint64_t* bits,
                        bool* decimal_float) {
  *decimal_float = false;
  if (s.empty()) return false;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F')) {
    *kind = Operand::Kind::kF32;
    return s.size() == 10 && ParseHex(s.substr(2), bits);
  }
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
    *kind = Operand::Kind::kF64;
    return s.size() == 18 && ParseHex(s.substr(2), bits);
  }
  if (s.back() == 'U' || s.back() == 'u') s.remove_suffix(1);
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    *kind = Operand::Kind::kInt;
    return ParseHex(s.substr(2), bits);
  }
  if (s.find_first_of(".eE") != std::string_view::npos) {
    std::string tmp(s);
    char* end = nullptr;
    double d = std::strtod(tmp.c_str(), &end);
    if (end != tmp.c_str() + tmp.size()) return false;
    *kind = Operand::Kind::kF64;
    std::memcpy(bits, &d, 8);
    *decimal_float = true;
    return true;
  }
  *kind = Operand::Kind::kInt;
  uint64_t v = 0;
  int base = (s.size() > 1 && s[0] == '0') ? 8 : 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s.remove_prefix(2);
  }
  for (char c : s) {
    int d = c - '0';
    if (d < 0 || d >= base) return false;
    unsigned __int128 nv = static_cast<unsigned __int128>(v) * base + d;
    if (nv > UINT64_MAX) return false;
    v = static_cast<uint64_t>(nv);
  }
  *bits = v;
  return true;
}

StatusOr<ast::Module> ParseModule(std::string_view text) {
  // Texture and surface references become objects first (references.h); the tree keeps no
  // view into the text.
  PVGPU_ASSIGN_OR_RETURN(std::optional<std::string> rewritten, RewriteReferences(text));
  if (rewritten) text = *rewritten;
  PVGPU_ASSIGN_OR_RETURN(std::vector<Token> toks, Tokenize(text));
  Parser p(std::move(toks));
  return p.Run();
}

}  // namespace pvgpu::ptx
