// Lowering: turns the syntax tree of one kernel (and the .func bodies it calls) into a
// KernelImage. Instruction families plug in through OpTable; each family file registers the
// opcodes it implements, so an opcode missing from every table is a load-time error.
//
// Implementors (new instruction): add a handler and a Lower function in the family file,
// register it in that family's Register* function, add a snippet test in the family's test.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptx/ast.h"
#include "ptx/ir.h"
#include "ptx/types.h"

namespace pvgpu::ptx {

class ProgramImpl;

enum class MemSpace : uint8_t { kGlobal, kShared, kLocal, kKParam, kGeneric };

struct Addr {
  MemSpace space = MemSpace::kGeneric;
  uint32_t base = kNoReg;  // register holding the base address (kNoReg: none)
  bool base32 = false;     // base register is 32-bit
  int64_t imm = 0;
};

struct Sym {
  enum class Kind : uint8_t { kReg, kFrame, kKParam, kShared, kGlobal, kFunc };
  Kind kind = Kind::kReg;
  uint32_t off = 0;  // register offset / frame offset / param offset / shared offset
  Ty ty = Ty::kNone;
  char cls = 'w';
  uint32_t count = 0;  // register range size (0: single)
  int index = -1;      // global or function index
  uint32_t size = 0;
  bool is_extern_shared = false;
};

class LowerCtx;
using LowerFn = Status (*)(LowerCtx& c);

class OpTable {
 public:
  void Add(const char* opcode, LowerFn fn) { map_[opcode] = fn; }
  LowerFn Find(const std::string& opcode) const {
    auto it = map_.find(opcode);
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<std::string, LowerFn> map_;
};

// Family registration (one per ops_*.cc file).
void RegisterArith(OpTable& t);
void RegisterBits(OpTable& t);
void RegisterCompare(OpTable& t);
void RegisterConvert(OpTable& t);
void RegisterMemory(OpTable& t);
void RegisterMove(OpTable& t);  // called by RegisterMemory
void RegisterAtomic(OpTable& t);
void RegisterWarp(OpTable& t);
void RegisterMath(OpTable& t);
void RegisterControl(OpTable& t);
void RegisterHalf(OpTable& t);
void RegisterTexture(OpTable& t);  // ops_texture.cc
void RegisterAsync(OpTable& t);    // ops_async.cc
void RegisterMma(OpTable& t);      // ops_mma.cc
const OpTable& GlobalOpTable();

class LowerCtx {
 public:
  LowerCtx(const ast::Module& m, ProgramImpl& prog, KernelImage& img);

  // Lowers kernel function `fi` and everything it calls into img.
  Status LowerKernel(int fi);
  // Lowers a .func body on its own (into a throwaway image) so that unsupported instructions
  // in functions no kernel calls are still load-time errors.
  Status ValidateFunction(int fi) {
    in_kernel_ = false;
    return LowerFunction(fi);
  }

  // --- API for instruction families ---
  const ast::Instruction& inst() const { return *cur_; }
  const std::vector<ast::Operand>& ops() const { return cur_->ops; }
  Status Err(const std::string& reason) const;
  Status ErrAt(const ast::Operand& o, const std::string& reason) const;
  Status Unsupported(const std::string& why = "") const;
  bool Has(std::string_view mod) const;
  // The i-th type modifier (".u32", ".f32" ...) in order of appearance; kNone when absent.
  Ty TypeMod(int i = 0) const;
  int NumTypeMods() const;
  Status NeedOps(size_t n) const;

  StatusOr<uint32_t> Src(int i, Ty t) { return SrcOp(ops()[i], t); }
  StatusOr<uint32_t> Dst(int i, Ty t) { return DstOp(ops()[i], t); }
  StatusOr<uint32_t> SrcOp(const ast::Operand& o, Ty t);
  StatusOr<uint32_t> DstOp(const ast::Operand& o, Ty t);
  // Operand 0 as a destination that may be a pair `d|p` (shfl, match, setp): d, of type
  // `first`, into in.a[0]; p, of type `second`, into in.a[1] when the pair is there.
  Status DstMaybePair(Inst& in, Ty first, Ty second);
  StatusOr<Addr> Address(const ast::Operand& o, MemSpace space);
  StatusOr<int> FuncIndex(const std::string& name) const;
  // Emits a branch-like instruction whose in.aux becomes the pc of label `o`.
  Status EmitBranch(Inst in, const ast::Operand& o);
  uint32_t Temp(char cls);
  uint32_t Const(char cls, uint64_t bits);
  // Appends an instruction with the current guard, then the pending destination fixups.
  void Emit(Inst in);
  void EmitUnguarded(Inst in);
  KernelImage& img() { return img_; }
  ProgramImpl& prog() { return prog_; }
  const ast::Module& module() const { return mod_; }
  bool in_kernel() const { return in_kernel_; }
  uint32_t CurrentFrameSize() const { return frame_cursor_; }
  int current_func() const { return cur_func_; }
  // Calls: the call lowering records a site; frames and pcs are patched after all functions.
  // `args`/`rets` name .param variables of the caller's frame. Returns the call-site index.
  StatusOr<uint32_t> AddCallSite(int callee, const std::vector<ast::Operand>& args,
                                 const std::vector<ast::Operand>& rets);
  // Builds the target table of an indirect call: every function whose address the module
  // takes (in code or initializers) and whose parameter counts match. Returns its index.
  StatusOr<uint32_t> AddIndirectTargets(const std::vector<ast::Operand>& args,
                                        const std::vector<ast::Operand>& rets);
  // Frame offset and size of a .param/.local symbol of the current function.
  StatusOr<uint32_t> FrameSymOffset(const ast::Operand& o, uint32_t* size);
  // Marks the instruction emitted next as one that waits on other threads (a volatile, relaxed
  // or acquire load, an atomic, nanosleep): a backward branch over it closes a spin loop, which
  // yields to other blocks in cooperative launches.
  void MarkPoll() { poll_pcs_.push_back(static_cast<uint32_t>(img_.code.size())); }

 private:
  struct PendingLabel {
    uint32_t pc;
    std::string label;
    int line, col;
  };
  struct PendingCall {
    uint32_t site;
    int callee;
    int caller;
  };
  struct FuncState {
    bool lowered = false;
    uint32_t entry_pc = 0;
    uint32_t frame = 0;
    std::unordered_map<std::string, uint32_t> formal_off;  // params and rets
    uint32_t reg_lo = 0, reg_hi = 0;                       // register range in the file
    std::vector<std::pair<uint32_t, uint32_t>> regs;       // (offset, class size per lane)
  };

  Status LowerFunction(int fi);
  Status DeclareLocal(const ast::VarDecl& d);
  const Sym* Lookup(const std::string& name, uint32_t* reg_off) const;
  StatusOr<const Sym*> SharedSym(const std::string& name);
  uint32_t AllocReg(char cls);
  Status CheckRecursion();
  // Gives %envregN a register slot the first time the kernel names it.
  void DeclareEnvReg(const std::string& name);
  bool DeclareReservedShared(const std::string& name);
  // Turns the current function's backward branches that close a loop containing a poll into
  // spinning branches (ExecBraSpin).
  void MarkSpinLoops();

  const ast::Module& mod_;
  ProgramImpl& prog_;
  KernelImage& img_;
  const ast::Instruction* cur_ = nullptr;
  int cur_func_ = -1;
  bool in_kernel_ = false;
  uint32_t guard_ = kNoReg;
  bool guard_neg_ = false;
  uint32_t frame_cursor_ = 0;
  std::vector<std::unordered_map<std::string, Sym>> scopes_;
  std::unordered_map<std::string, Sym> module_syms_;
  std::unordered_map<std::string, uint32_t> labels_;
  std::vector<PendingLabel> pending_labels_;
  std::vector<PendingCall> pending_calls_;
  std::vector<Inst> fixups_;
  std::vector<uint32_t> poll_pcs_;  // ascending
  std::map<std::pair<char, uint64_t>, uint32_t> consts_;
  std::vector<FuncState> funcs_;
  std::vector<int> worklist_;
  std::vector<std::vector<int>> call_graph_;
  uint32_t shared_cursor_ = 0;
};

}  // namespace pvgpu::ptx
