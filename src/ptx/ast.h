// Syntax tree produced by the parser and consumed by lowering. It mirrors the PTX text closely;
// name resolution, types and layout are decided in lowering.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pvgpu::ptx::ast {

enum class Space : uint8_t { kNone, kReg, kGlobal, kConst, kShared, kLocal, kParam, kGeneric };

struct Operand {
  enum class Kind : uint8_t {
    kReg,      // %r1 (or a predicate), possibly with '!' (neg)
    kSymbol,   // a name that is not a register: label, variable, function
    kInt,      // integer immediate (bits in `value`)
    kF32,      // 0f... or decimal float used as f32 (bits in `value`)
    kF64,      // 0d... or decimal float (bits in `value`)
    kAddress,  // [base+offset]; base is `name` (register or symbol) or empty for [imm]
    kVector,   // {a, b, ...}
    kPair,     // a|b (shfl/setp second destination)
    kSink,     // '_'
  };
  Kind kind = Kind::kInt;
  bool neg = false;            // !%p
  std::string name;            // register / symbol / address base
  int64_t offset = 0;          // address offset
  uint64_t value = 0;          // immediate bits
  bool decimal_float = false;  // written as 1.5 (type decided by the instruction)
  std::vector<Operand> elems;  // vector or pair elements
  int line = 0, col = 0;
};

struct Instruction {
  std::string guard;  // predicate register or empty
  bool guard_neg = false;
  std::string opcode;             // "add"
  std::vector<std::string> mods;  // ".s32", ".rn" ... (with dots)
  std::vector<Operand> ops;
  int line = 0, col = 0;
  std::string text;  // opcode with modifiers, for messages
};

struct VarDecl {
  Space space = Space::kNone;
  std::string type;    // ".b32", ".u64", ".pred", ".f32" ...
  uint32_t align = 0;  // 0: natural
  std::string name;
  bool is_range = false;  // %r<N>
  uint32_t range_count = 0;
  std::vector<uint64_t> dims;  // array dimensions; a 0 dimension means [] (unsized)
  bool has_dims = false;
  bool is_extern = false;
  bool is_visible = false;
  bool is_weak = false;  // .weak (also sets is_visible): another definition may replace it
  uint32_t vector = 1;  // .v2/.v4 variables
  // Initializer: flattened scalars (ints or float bits) or symbol references.
  struct Init {
    bool is_symbol = false;
    bool generic = false;  // generic(sym)
    std::string symbol;
    int64_t addend = 0;
    uint64_t bits = 0;
    bool decimal_float = false;
    double fvalue = 0;
  };
  std::vector<Init> init;
  bool has_init = false;
  int line = 0, col = 0;
};

struct Statement {
  enum class Kind : uint8_t { kInst, kLabel, kDecl, kOpen, kClose };
  Kind kind = Kind::kInst;
  Instruction inst;
  VarDecl decl;
  std::string label;
  int line = 0, col = 0;
};

struct Function {
  bool is_entry = false;
  bool is_extern = false;
  bool is_visible = false;
  bool is_weak = false;  // .weak (also sets is_visible): another definition may replace it
  std::string name;
  std::vector<VarDecl> params;
  std::vector<VarDecl> rets;
  std::vector<Statement> body;
  bool has_body = false;
  uint32_t maxntid[3] = {0, 0, 0};
  uint32_t reqntid[3] = {0, 0, 0};
  int line = 0, col = 0;
  // "name: .branchtargets L0, L1, ...;" lists in the body, for brx.idx (name, labels).
  std::vector<std::pair<std::string, std::vector<Operand>>> branch_targets;
};

struct Module {
  std::string version;
  std::string target;
  uint32_t address_size = 64;
  std::vector<VarDecl> globals;  // .global/.const/.shared (module scope)
  std::vector<Function> functions;
};

}  // namespace pvgpu::ptx::ast
