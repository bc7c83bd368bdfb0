// The compiling engine's code generator: one LLVM function per kernel image, compiled by ORC
// JIT for the host CPU. See jit.h for the model; the function's shape:
//
//   dispatch:  if the warp stopped: return; switch (pc) to the entry of the segment starting
//              there, default: one interpreter step, back to dispatch
//   entry(s):  the interpreter loop's checks (time slice, cancellation, pc >= next_wait), then
//              the segment's native body when no divergent lanes wait inside it: one body for
//              a full warp (masks fold away) and one for a partial warp
//   body(s):   the instructions of [s, e); natively described ones (native.h) as vector code
//              on the warp's register file, the others as calls of their handlers; a handler
//              that changes control state (returns true) leaves to dispatch
//
// Register-file accesses and memory accesses are in different alias scopes, so values stay in
// vector registers across loads and stores of guest memory; a handler call is opaque and
// makes LLVM keep the register file exact, which is what lets both kinds of code mix.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <llvm/ADT/StringExtras.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "common/log.h"
#include "ptx/families.h"
#include "ptx/handlers.h"
#include "ptx/jit_cache.h"
#include "ptx/jit_codegen.h"
#include "ptx/native.h"

namespace pvgpu::ptx {
namespace {

using llvm::BasicBlock;
using llvm::Value;

// Process-wide LLVM state. Never destroyed: background compilations may run until exit.
struct JitEngine {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::unique_ptr<llvm::TargetMachine> tm;  // for the optimizer's cost model
  // Serializes everything that touches LLVM: ORC's linking of one module raced with another's
  // (crashes seen with two at once), and removing code races with adding it.
  std::recursive_mutex mu;
  std::string error;
};

JitEngine& TheEngine() {
  static JitEngine* e = [] {
    auto* e = new JitEngine;
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      e->error = llvm::toString(jtmb.takeError());
      return e;
    }
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      e->error = llvm::toString(tm.takeError());
      return e;
    }
    e->tm = std::move(*tm);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) {
      e->error = llvm::toString(jit.takeError());
      return e;
    }
    e->lljit = std::move(*jit);
    return e;
  }();
  return *e;
}

// Whether a cvt compiles natively: the conversions LLVM's instructions perform exactly as
// ExecCvt does (no .ftz or .sat, no directed rounding where a conversion rounds).
bool CvtSupported(const NativeDesc& d, const Inst& in) {
  if (in.flags != 0) return false;
  const Round rm = static_cast<Round>(in.aux);
  const bool directed = rm == Round::kRz || rm == Round::kRm || rm == Round::kRp;
  if (!IsFloat(d.s) && IsFloat(d.d)) return !directed;  // int to float rounds
  if (IsFloat(d.s) && IsFloat(d.d) && d.d == Ty::kF32 && d.s == Ty::kF64) return !directed;
  return true;  // int to int, float to int (integral rounding), exact float conversions
}

// Whether the generator emits `in` (described by `d`) natively, else it calls its handler.
bool Supported(const NativeDesc& d, const Inst& in) {
  switch (d.op) {
    case NOp::kCvt:
      return CvtSupported(d, in);
    case NOp::kShift:
    case NOp::kShiftImm:
      return TypeSize(d.d) >= 4;
    case NOp::kMulWide:
      return TypeSize(d.d) == 2 * TypeSize(d.s) && TypeSize(d.s) >= 2;
    case NOp::kLd:
    case NOp::kSt:
      return d.vec >= 1 && d.vec <= 4 && (d.bytes == 1 || d.bytes == 2 || d.bytes == 4 ||
                                          d.bytes == 8);
    case NOp::kNone:
      return false;
    default:
      return true;
  }
}

class Gen {
 public:
  Gen(llvm::LLVMContext& ctx, llvm::Module& mod, const KernelImage& img)
      : ctx_(ctx), mod_(mod), img_(img), b_(ctx) {
    i1_ = llvm::Type::getInt1Ty(ctx);
    i8_ = llvm::Type::getInt8Ty(ctx);
    i32_ = llvm::Type::getInt32Ty(ctx);
    i64_ = llvm::Type::getInt64Ty(ctx);
    ptr_ = llvm::PointerType::get(ctx, 0);
    llvm::MDBuilder md(ctx);
    llvm::MDNode* domain = md.createAnonymousAliasScopeDomain("pvgpu");
    llvm::MDNode* regs = md.createAnonymousAliasScope(domain, "registers");
    llvm::MDNode* mem = md.createAnonymousAliasScope(domain, "memory");
    regs_scope_ = llvm::MDNode::get(ctx, {regs});
    mem_scope_ = llvm::MDNode::get(ctx, {mem});
  }

  llvm::Function* Build(const std::string& name, const llvm::TargetMachine& tm, JitStats* stats);

 private:
  // --- Types and register file ---
  llvm::Type* ElemTy(Ty t) const {
    if (t == Ty::kF32) return llvm::Type::getFloatTy(ctx_);
    if (t == Ty::kF64) return llvm::Type::getDoubleTy(ctx_);
    return llvm::Type::getIntNTy(ctx_, 8 * TypeSize(t));
  }
  llvm::Type* StorageTy(Ty t) const { return TypeSize(t) == 8 ? i64_ : i32_; }
  llvm::VectorType* Vec(llvm::Type* t) const { return llvm::FixedVectorType::get(t, 32); }

  void TagRegs(llvm::Instruction* i) {
    i->setMetadata(llvm::LLVMContext::MD_alias_scope, regs_scope_);
    i->setMetadata(llvm::LLVMContext::MD_noalias, mem_scope_);
  }
  void TagMem(llvm::Instruction* i) {
    i->setMetadata(llvm::LLVMContext::MD_alias_scope, mem_scope_);
    i->setMetadata(llvm::LLVMContext::MD_noalias, regs_scope_);
  }
  Value* RegAddr(uint32_t off) { return b_.CreateConstInBoundsGEP1_64(i8_, regs_, off); }
  Value* LoadStorage(uint32_t off, llvm::Type* storage) {
    auto* ld = b_.CreateAlignedLoad(Vec(storage), RegAddr(off), llvm::Align(4));
    TagRegs(ld);
    return ld;
  }
  void StoreStorage(uint32_t off, Value* v) {
    auto* st = b_.CreateAlignedStore(v, RegAddr(off), llvm::Align(4));
    TagRegs(st);
    ForgetAddresses(off, mod_.getDataLayout().getTypeStoreSize(v->getType()));
  }
  Value* LoadPred(uint32_t off) {
    auto* ld = b_.CreateAlignedLoad(i32_, RegAddr(off), llvm::Align(4));
    TagRegs(ld);
    return ld;
  }
  void StorePred(uint32_t off, Value* v) {
    auto* st = b_.CreateAlignedStore(v, RegAddr(off), llvm::Align(4));
    TagRegs(st);
    ForgetAddresses(off, 4);
  }

  // --- What is known of the address registers of a straight run ---
  // The warp-wide facts a memory access checks about its address register (ops_memory.cc's
  // WarpRange), computed once per register value and reused by every later access through
  // the same register in the same segment body, whatever its constant offset: a tile loop's
  // sixteen loads from [%r9], [%r9+4] ... [%r9+60] reduce %r9 once. Valid while the values
  // dominate the code being emitted: an entry is made only where its block dominates the rest
  // of the body, dropped when its register is written (StoreStorage, StorePred) and all of
  // them at a handler call, which may write any register, and at the start of each body.
  struct AddrInfo {
    Value* lo;   // i64: the lowest lane address, before the access's offset
    Value* hi;   // i64: the highest
    Value* rel;  // <32 x i32>: each lane's address minus lo (meaningful when hi - lo < 2^31)
    Value* orx;  // i32: the or of rel (for alignment: every lane is lo + rel)
    std::map<uint32_t, Value*> shapes;  // Shape's answers
  };
  void ForgetAddresses(uint64_t off, uint64_t size) {
    for (auto it = addr_info_.begin(); it != addr_info_.end();) {
      const uint64_t reg = it->first.first, reg_size = it->first.second ? 128 : 256;
      if (reg < off + size && off < reg + reg_size) {
        it = addr_info_.erase(it);
      } else {
        ++it;
      }
    }
  }
  void ForgetAllAddresses() { addr_info_.clear(); }
  // The facts of address register reg (32-bit when narrow), from the table or computed here;
  // kept in the table only when keep (the current block dominates the rest of the body).
  AddrInfo& AddressOf(uint32_t reg, bool narrow, bool keep) {
    const auto key = std::make_pair(reg, narrow);
    if (auto it = addr_info_.find(key); it != addr_info_.end()) return it->second;
    AddrInfo ai;
    if (narrow) {
      // Reduced at 32 bits: half the vector width, and umin(zext x) = zext(umin x).
      Value* x = LoadStorage(reg, i32_);
      Value* lo = b_.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_umin, x);
      Value* hi = b_.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_umax, x);
      ai.rel = b_.CreateSub(x, Splat(lo));
      ai.lo = b_.CreateZExt(lo, i64_);
      ai.hi = b_.CreateZExt(hi, i64_);
    } else {
      Value* x = LoadStorage(reg, i64_);
      ai.lo = b_.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_umin, x);
      ai.hi = b_.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_umax, x);
      ai.rel = b_.CreateTrunc(b_.CreateSub(x, Splat(ai.lo)), Vec(i32_));
    }
    ai.orx = b_.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_or, ai.rel);
    if (!keep) {
      addr_scratch_ = std::move(ai);
      return addr_scratch_;
    }
    return addr_info_[key] = std::move(ai);
  }
  // Shapes of a warp's addresses, each an i1 computed in the current block (and remembered
  // with ai when keep): kContiguous + size, lane i at lo + i * size; kHalvesUniform, lanes 0-15
  // at one address and 16-31 at another (a 16x16 block's row broadcast); kHalvesEqual, lanes
  // 16-31 at the addresses of lanes 0-15 (a 16x16 block's column).
  // kHalvesContiguous + size: lanes 0-15 consecutive from lo and lanes 16-31 consecutive from
  // lane 16's address (a 16-wide block's two rows).
  static constexpr uint32_t kHalvesUniform = 1u << 20, kHalvesEqual = kHalvesUniform + 1,
                            kContiguous = 0, kHalvesContiguous = 1u << 21;
  Value* Shape(AddrInfo& ai, uint32_t shape, bool keep) {
    if (auto it = ai.shapes.find(shape); it != ai.shapes.end()) return it->second;
    Value* expected;
    if (shape > kHalvesContiguous) {
      const uint32_t size = shape - kHalvesContiguous;
      std::vector<int> pick(32);
      std::vector<llvm::Constant*> iota;
      for (uint32_t i = 0; i < 32; ++i) {
        pick[i] = static_cast<int>(i & 16);
        iota.push_back(llvm::ConstantInt::get(i32_, (i & 15) * size));
      }
      expected = b_.CreateAdd(b_.CreateShuffleVector(ai.rel, pick), llvm::ConstantVector::get(iota));
    } else if (shape == kHalvesUniform || shape == kHalvesEqual) {
      std::vector<int> pick(32);
      for (int i = 0; i < 32; ++i) pick[i] = shape == kHalvesUniform ? i & 16 : i & 15;
      expected = b_.CreateShuffleVector(ai.rel, pick);
    } else {
      std::vector<llvm::Constant*> iota;
      for (uint32_t i = 0; i < 32; ++i) {
        iota.push_back(llvm::ConstantInt::get(i32_, i * (shape - kContiguous)));
      }
      expected = llvm::ConstantVector::get(iota);
    }
    Value* v = b_.CreateUnaryIntrinsic(llvm::Intrinsic::vector_reduce_and,
                                       b_.CreateICmpEQ(ai.rel, expected));
    if (keep) ai.shapes[shape] = v;
    return v;
  }
  // A register read as type t (LoadReg).
  Value* Src(uint32_t off, Ty t) {
    Value* v = LoadStorage(off, StorageTy(t));
    if (TypeSize(t) < 4) return b_.CreateTrunc(v, Vec(ElemTy(t)));
    if (IsFloat(t)) return b_.CreateBitCast(v, Vec(ElemTy(t)));
    return v;
  }
  static bool AllOnes(Value* m) {
    auto* c = llvm::dyn_cast<llvm::ConstantInt>(m);
    return c != nullptr && c->isAllOnesValue();
  }
  // Lane i of a mask word as a vector of i1. Written as a per-lane bit test rather than a
  // bitcast of the word: LLVM 19's X86 DAG combiner loops forever on some chains of selects by
  // bitcast masks (seen on random kernels; jit_test.cc's RandomKernelsAgreeBitForBit).
  Value* MaskVec(Value* m) {
    std::vector<llvm::Constant*> bits;
    for (uint32_t i = 0; i < 32; ++i) bits.push_back(llvm::ConstantInt::get(i32_, 1u << i));
    return b_.CreateICmpNE(b_.CreateAnd(Splat(m), llvm::ConstantVector::get(bits)),
                           llvm::Constant::getNullValue(Vec(i32_)));
  }
  // A register written as type t for the lanes in m (StoreReg: small values zero-extended).
  void Dst(uint32_t off, Ty t, Value* v, Value* m) {
    llvm::Type* storage = StorageTy(t);
    if (IsFloat(t)) v = b_.CreateBitCast(v, Vec(storage));
    if (TypeSize(t) < 4) v = b_.CreateZExt(v, Vec(storage));
    if (!AllOnes(m)) v = b_.CreateSelect(MaskVec(m), v, LoadStorage(off, storage));
    StoreStorage(off, v);
  }
  void DstPred(uint32_t off, Value* v, Value* m) {
    if (AllOnes(m)) {
      StorePred(off, v);
      return;
    }
    Value* d = LoadPred(off);
    StorePred(off, b_.CreateOr(b_.CreateAnd(d, b_.CreateNot(m)), b_.CreateAnd(v, m)));
  }
  Value* Splat(Value* v) { return b_.CreateVectorSplat(32, v); }
  Value* C32(uint64_t v) { return llvm::ConstantInt::get(i32_, v); }
  Value* C64(uint64_t v) { return llvm::ConstantInt::get(i64_, v); }
  // A helper (jit_codegen.h) by its symbol name: the object code refers to helpers only by
  // name, resolved when it is linked into this process, so it can be cached on disk.
  llvm::FunctionCallee Helper(const char* name, llvm::FunctionType* ty) {
    return mod_.getOrInsertFunction(name, ty);
  }
  void CallHelper(const char* name, Value* arg) {
    auto* ty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptr_}, false);
    b_.CreateCall(Helper(name, ty), {arg});
  }

  // --- Control ---
  void Goto(uint32_t pc) {
    b_.CreateStore(C32(pc), pcp_);
    auto it = entries_.find(pc);
    b_.CreateBr(it != entries_.end() ? it->second : dispatch_);
  }
  // The instruction's lane mask: active & guard.
  Value* LaneMask(const Inst& in, Value* active) {
    if (in.guard == kNoReg) return active;
    Value* p = LoadPred(in.guard);
    if (in.guard_neg) p = b_.CreateNot(p);
    return b_.CreateAnd(active, p);
  }
  // Calls the handler of code[pc] with mask m (nonzero); true leaves to post_handler_.
  void CallHandler(uint32_t pc, Value* m) {
    ForgetAllAddresses();
    b_.CreateStore(C32(pc), pcp_);
    // The code pointer is read again from the arguments at every call: computed from the
    // entry's copy, the instructions' addresses were loop invariants that LLVM hoisted to the
    // function's entry, about a hundred of them spilled to the stack on every entry (after each
    // barrier), 6% of a tiled sgemm's time.
    auto* code = b_.CreateAlignedLoad(ptr_, b_.CreateConstInBoundsGEP1_64(i8_, args_, 8 * 2),
                                      llvm::Align(8));
    Value* inst = b_.CreateConstInBoundsGEP1_64(i8_, code, uint64_t{pc} * sizeof(Inst));
    static_assert(offsetof(Inst, fn) == 0);
    Value* fn = b_.CreateAlignedLoad(ptr_, inst, llvm::Align(8));
    auto* ty = llvm::FunctionType::get(i8_, {ptr_, ptr_, i32_}, false);
    Value* r = b_.CreateCall(ty, fn, {inst, w_, m});
    BasicBlock* cont = BasicBlock::Create(ctx_, "cont", f_);
    b_.CreateCondBr(b_.CreateICmpNE(b_.CreateAnd(r, llvm::ConstantInt::get(i8_, 1)),
                                    llvm::ConstantInt::get(i8_, 0)),
                    post_handler_, cont);
    b_.SetInsertPoint(cont);
  }
  // if (m != 0) CallHandler: the interpreter does not call handlers without lanes.
  void CallHandlerIfAny(uint32_t pc, Value* m) {
    if (AllOnes(m)) {
      CallHandler(pc, m);
      return;
    }
    BasicBlock* call = BasicBlock::Create(ctx_, "call", f_);
    BasicBlock* done = BasicBlock::Create(ctx_, "skip", f_);
    b_.CreateCondBr(b_.CreateICmpNE(m, C32(0)), call, done);
    b_.SetInsertPoint(call);
    CallHandler(pc, m);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // --- Instructions ---
  // Emits code[pc] into the current block; false when the block is terminated (a branch).
  bool Emit(uint32_t pc, Value* active);
  void EmitLanewise(const Inst& in, const NativeDesc& d, Value* m);
  void EmitSetp(const Inst& in, const NativeDesc& d, Value* m);
  void EmitCvt(const Inst& in, const NativeDesc& d, Value* m);
  void EmitShfl(const Inst& in, const NativeDesc& d, Value* m);
  void EmitVote(const Inst& in, Value* m);
  Value* FMinMax(Value* a, Value* b, bool max, bool nan_wins);
  void EmitMemory(uint32_t pc, const Inst& in, const NativeDesc& d, Value* m);
  Value* Compare(int op, Ty t, Value* a, Value* b);

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  const KernelImage& img_;
  llvm::IRBuilder<> b_;
  llvm::Type *i1_, *i8_, *i32_, *i64_;
  llvm::PointerType* ptr_;
  llvm::MDNode *regs_scope_, *mem_scope_;
  llvm::Function* f_ = nullptr;
  Value *args_, *w_, *regs_, *pcp_, *activep_, *nwp_, *statep_, *shared_, *shared_size_, *params_,
      *param_size_, *cache_;
  BasicBlock *dispatch_, *post_handler_, *exit_;
  std::map<uint32_t, BasicBlock*> entries_;
  std::vector<const NativeDesc*> desc_;  // per pc: native description, or nullptr
  std::map<std::pair<uint32_t, bool>, AddrInfo> addr_info_;  // by register offset, narrow
  AddrInfo addr_scratch_;  // AddressOf's answer when it is not kept
};

Value* Gen::Compare(int op, Ty t, Value* a, Value* b) {
  // ops_compare.cc's CmpOp order.
  enum { kEq, kNe, kLt, kLe, kGt, kGe, kLo, kLs, kHi, kHs, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu,
         kNum, kNan };
  using P = llvm::CmpInst::Predicate;
  if (IsFloat(t)) {
    static const P kFloat[] = {P::FCMP_OEQ, P::FCMP_ONE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT,
                               P::FCMP_OGE, P::FCMP_FALSE, P::FCMP_FALSE, P::FCMP_FALSE,
                               P::FCMP_FALSE, P::FCMP_UEQ, P::FCMP_UNE, P::FCMP_ULT, P::FCMP_ULE,
                               P::FCMP_UGT, P::FCMP_UGE, P::FCMP_ORD, P::FCMP_UNO};
    return b_.CreateFCmp(kFloat[op], a, b);
  }
  const bool sgn = IsSigned(t);
  switch (op) {
    case kEq:
      return b_.CreateICmpEQ(a, b);
    case kNe:
      return b_.CreateICmpNE(a, b);
    case kLt:
      return sgn ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
    case kLe:
      return sgn ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
    case kGt:
      return sgn ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
    case kGe:
      return sgn ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
    case kLo:
      return b_.CreateICmpULT(a, b);
    case kLs:
      return b_.CreateICmpULE(a, b);
    case kHi:
      return b_.CreateICmpUGT(a, b);
    case kHs:
      return b_.CreateICmpUGE(a, b);
    default:
      return llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(32),
                                            llvm::ConstantInt::getFalse(ctx_));
  }
}

void Gen::EmitLanewise(const Inst& in, const NativeDesc& d, Value* m) {
  const Ty t = d.s;
  auto src = [&](int k) { return Src(in.a[k], t); };
  Value* r = nullptr;
  auto fconst = [&](double v) {
    return Splat(llvm::ConstantFP::get(ElemTy(t), v));
  };
  auto intrinsic = [&](llvm::Intrinsic::ID id, std::vector<Value*> args) {
    return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
  };
  switch (d.op) {
    case NOp::kMov:
      r = src(1);
      break;
    case NOp::kAdd:
      r = b_.CreateAdd(src(1), src(2));
      break;
    case NOp::kSub:
      r = b_.CreateSub(src(1), src(2));
      break;
    case NOp::kMulLo:
      r = b_.CreateMul(src(1), src(2));
      break;
    case NOp::kMadLo:
      r = b_.CreateAdd(b_.CreateMul(src(1), src(2)), src(3));
      break;
    case NOp::kMulWide: {
      llvm::Type* wide = Vec(ElemTy(d.d));
      Value* a = IsSigned(t) ? b_.CreateSExt(src(1), wide) : b_.CreateZExt(src(1), wide);
      Value* b = IsSigned(t) ? b_.CreateSExt(src(2), wide) : b_.CreateZExt(src(2), wide);
      r = b_.CreateMul(a, b);
      break;
    }
    case NOp::kMin:
    case NOp::kMax: {
      Value* a = src(1);
      Value* b = src(2);
      const bool mx = d.op == NOp::kMax;
      Value* c = IsSigned(t) ? (mx ? b_.CreateICmpSGT(a, b) : b_.CreateICmpSLT(a, b))
                             : (mx ? b_.CreateICmpUGT(a, b) : b_.CreateICmpULT(a, b));
      r = b_.CreateSelect(c, a, b);
      break;
    }
    case NOp::kNeg:
      r = b_.CreateNeg(src(1));
      break;
    case NOp::kAbs: {
      Value* a = src(1);
      r = IsSigned(t) ? b_.CreateSelect(b_.CreateICmpSLT(a, llvm::Constant::getNullValue(
                                                               a->getType())),
                                        b_.CreateNeg(a), a)
                      : a;
      break;
    }
    case NOp::kAnd:
      r = b_.CreateAnd(src(1), src(2));
      break;
    case NOp::kOr:
      r = b_.CreateOr(src(1), src(2));
      break;
    case NOp::kXor:
      r = b_.CreateXor(src(1), src(2));
      break;
    case NOp::kNot:
      r = b_.CreateNot(src(1));
      break;
    case NOp::kFAdd:
      r = b_.CreateFAdd(src(1), src(2));
      break;
    case NOp::kFSub:
      r = b_.CreateFSub(src(1), src(2));
      break;
    case NOp::kFMul:
      r = b_.CreateFMul(src(1), src(2));
      break;
    case NOp::kFDiv:
      r = b_.CreateFDiv(src(1), src(2));
      break;
    case NOp::kFFma:
      r = intrinsic(llvm::Intrinsic::fma, {src(1), src(2), src(3)});
      break;
    case NOp::kFNeg:
      r = b_.CreateFNeg(src(1));
      break;
    case NOp::kFAbs:
      r = intrinsic(llvm::Intrinsic::fabs, {src(1)});
      break;
    case NOp::kFSqrt:
      r = intrinsic(llvm::Intrinsic::sqrt, {src(1)});
      break;
    case NOp::kFRsqrt:
      r = b_.CreateFDiv(fconst(1.0), intrinsic(llvm::Intrinsic::sqrt, {src(1)}));
      break;
    case NOp::kFRcp:
      r = b_.CreateFDiv(fconst(1.0), src(1));
      break;
    case NOp::kFMin:
    case NOp::kFMax:
    case NOp::kFMinNaN:
    case NOp::kFMaxNaN:
      r = FMinMax(src(1), src(2), d.op == NOp::kFMax || d.op == NOp::kFMaxNaN,
                  d.op == NOp::kFMinNaN || d.op == NOp::kFMaxNaN);
      break;
    default:
      return;
  }
  Dst(in.a[0], d.d, r, m);
}

// float_ops.h's FMinMax, lane by lane: of two numbers the smaller (larger), of two equal ones
// the negative (positive) one, so -0 is below +0; one NaN yields the other operand (IEEE
// minNum), two NaNs or (nan_wins, .NaN) any NaN the canonical quiet NaN the interpreter returns.
Value* Gen::FMinMax(Value* a, Value* b, bool max, bool nan_wins) {
  llvm::Type* vt = a->getType();
  llvm::Type* it = Vec(b_.getIntNTy(vt->getScalarSizeInBits()));
  Value* neg_a = b_.CreateICmpSLT(b_.CreateBitCast(a, it), llvm::Constant::getNullValue(it));
  Value* beats = max ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
  Value* tie = b_.CreateAnd(b_.CreateFCmpOEQ(a, b), max ? b_.CreateNot(neg_a) : neg_a);
  Value* r = b_.CreateSelect(b_.CreateOr(beats, tie), a, b);
  Value* qnan = llvm::ConstantFP::getQNaN(vt);
  Value* nan_a = b_.CreateFCmpUNO(a, a);
  Value* nan_b = b_.CreateFCmpUNO(b, b);
  if (nan_wins) return b_.CreateSelect(b_.CreateOr(nan_a, nan_b), qnan, r);
  r = b_.CreateSelect(nan_b, a, r);
  r = b_.CreateSelect(nan_a, b, r);
  return b_.CreateSelect(b_.CreateAnd(nan_a, nan_b), qnan, r);
}

// ExecShfl: each lane's source lane from its b and c operands, the value read from the source
// register in the register file (a gather: lanes outside m read whatever it holds, as there),
// the optional predicate telling which lanes got another lane's value.
void Gen::EmitShfl(const Inst& in, const NativeDesc& d, Value* m) {
  std::vector<llvm::Constant*> ids;
  for (uint32_t i = 0; i < 32; ++i) ids.push_back(llvm::ConstantInt::get(i32_, i));
  Value* lane = llvm::ConstantVector::get(ids);
  Value* b = b_.CreateAnd(Src(in.a[3], Ty::kU32), Splat(C32(31)));
  Value* c = Src(in.a[4], Ty::kU32);
  Value* cval = b_.CreateAnd(c, Splat(C32(31)));
  Value* seg = b_.CreateAnd(b_.CreateLShr(c, Splat(C32(8))), Splat(C32(31)));
  Value* not_seg = b_.CreateNot(seg);
  Value* min_lane = b_.CreateAnd(lane, seg);
  Value* max_lane = b_.CreateOr(min_lane, b_.CreateAnd(cval, not_seg));
  Value* j;
  Value* ok;
  switch (d.k) {
    case 0:
      j = b_.CreateSub(lane, b);
      ok = b_.CreateICmpSGE(j, max_lane);
      break;
    case 1:
      j = b_.CreateAdd(lane, b);
      ok = b_.CreateICmpSLE(j, max_lane);
      break;
    case 2:
      j = b_.CreateXor(lane, b);
      ok = b_.CreateICmpSLE(j, max_lane);
      break;
    default:
      j = b_.CreateOr(min_lane, b_.CreateAnd(b, not_seg));
      ok = b_.CreateICmpSLE(j, max_lane);
      break;
  }
  Value* in_warp = b_.CreateICmpULT(j, Splat(C32(32)));  // also j >= 0
  j = b_.CreateSelect(b_.CreateAnd(ok, in_warp), j, lane);
  Value* ptrs = b_.CreateGEP(i32_, RegAddr(in.a[2]), j);
  Value* all = llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(32),
                                              llvm::ConstantInt::getTrue(ctx_));
  auto* v = b_.CreateMaskedGather(Vec(i32_), ptrs, llvm::Align(4), all);
  TagRegs(v);
  if (in.a[1] != kNoReg) DstPred(in.a[1], b_.CreateBitCast(ok, i32_), m);
  Dst(in.a[0], Ty::kU32, v, m);
}

// ExecVote: all, any and uni set a predicate, ballot writes the mask of lanes in m whose
// predicate is true.
void Gen::EmitVote(const Inst& in, Value* m) {
  Value* p = b_.CreateAnd(LoadPred(in.a[1]), m);
  if (in.aux == 3) {
    Dst(in.a[0], Ty::kU32, Splat(p), m);
    return;
  }
  Value* v = in.aux == 0   ? b_.CreateICmpEQ(p, m)
             : in.aux == 1 ? b_.CreateICmpNE(p, C32(0))
                           : b_.CreateOr(b_.CreateICmpEQ(p, C32(0)), b_.CreateICmpEQ(p, m));
  DstPred(in.a[0], b_.CreateSelect(v, C32(0xFFFFFFFFu), C32(0)), m);
}

// ExecCvt for the forms CvtSupported admits.
void Gen::EmitCvt(const Inst& in, const NativeDesc& d, Value* m) {
  const Ty dt = d.d, st = d.s;
  const Round rm = static_cast<Round>(in.aux);
  Value* v = Src(in.a[1], st);
  llvm::Type* dty = Vec(ElemTy(dt));
  // To an integral value as the mode says (float to int without one truncates).
  auto integral = [&](Value* x, bool to_int) -> Value* {
    llvm::Intrinsic::ID id;
    switch (rm) {
      case Round::kRni:
        id = llvm::Intrinsic::roundeven;
        break;
      case Round::kRzi:
        id = llvm::Intrinsic::trunc;
        break;
      case Round::kRmi:
        id = llvm::Intrinsic::floor;
        break;
      case Round::kRpi:
        id = llvm::Intrinsic::ceil;
        break;
      default:
        if (!to_int) return x;
        id = llvm::Intrinsic::trunc;
    }
    return b_.CreateIntrinsic(id, {x->getType()}, {x});
  };
  const unsigned sbits = 8 * TypeSize(st), dbits = 8 * TypeSize(dt);
  Value* r;
  if (!IsFloat(st) && !IsFloat(dt)) {
    r = dbits < sbits   ? b_.CreateTrunc(v, dty)
        : dbits > sbits ? (IsSigned(st) ? b_.CreateSExt(v, dty) : b_.CreateZExt(v, dty))
                        : v;
  } else if (!IsFloat(dt)) {
    // Saturating, NaN to 0: ExecCvt's range checks.
    r = b_.CreateIntrinsic(IsSigned(dt) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat,
                           {dty, v->getType()}, {integral(v, true)});
  } else if (!IsFloat(st)) {
    r = IsSigned(st) ? b_.CreateSIToFP(v, dty) : b_.CreateUIToFP(v, dty);
  } else {
    Value* x = integral(v, false);
    r = dbits > sbits ? b_.CreateFPExt(x, dty) : dbits < sbits ? b_.CreateFPTrunc(x, dty) : x;
  }
  Dst(in.a[0], dt, r, m);
}

void Gen::EmitSetp(const Inst& in, const NativeDesc& d, Value* m) {
  Value* bits = b_.CreateBitCast(Compare(d.k, d.s, Src(in.a[2], d.s), Src(in.a[3], d.s)), i32_);
  Value* c = in.a[4] != kNoReg ? LoadPred(in.a[4]) : C32(0);
  Value* nbits = b_.CreateNot(bits);
  switch (in.flags) {
    case 1:
      bits = b_.CreateAnd(bits, c);
      nbits = b_.CreateAnd(nbits, c);
      break;
    case 2:
      bits = b_.CreateOr(bits, c);
      nbits = b_.CreateOr(nbits, c);
      break;
    case 3:
      bits = b_.CreateXor(bits, c);
      nbits = b_.CreateXor(nbits, c);
      break;
    default:
      break;
  }
  DstPred(in.a[0], bits, m);
  if (in.a[1] != kNoReg) DstPred(in.a[1], nbits, m);
}

// ld/st of a whole warp: one range and alignment check (ops_memory.cc's WarpRange), then a
// broadcast (one address), a vector access (consecutive addresses) or a gather/scatter. Partial
// warps, failed checks and the parameter space's other forms take the handler, which also
// reports faults.
void Gen::EmitMemory(uint32_t pc, const Inst& in, const NativeDesc& d, Value* m) {
  const bool store = d.op == NOp::kSt;
  const uint32_t bytes = d.bytes, vec = d.vec, total = bytes * vec;
  llvm::Type* elem = llvm::Type::getIntNTy(ctx_, 8 * bytes);
  llvm::Type* storage = bytes == 8 ? i64_ : i32_;
  BasicBlock* slow = BasicBlock::Create(ctx_, "mem.slow", f_);
  BasicBlock* done = BasicBlock::Create(ctx_, "mem.done", f_);
  BasicBlock* check = BasicBlock::Create(ctx_, "mem.check", f_);
  if (AllOnes(m)) {
    b_.CreateBr(check);
  } else {
    b_.CreateCondBr(b_.CreateICmpEQ(m, C32(0xFFFFFFFFu)), check, slow);
  }
  b_.SetInsertPoint(check);
  auto value_reg = [&](uint32_t k) { return in.a[k]; };

  if (d.space == NSpace::kParam) {
    // Natively only a load at a constant offset (every lane reads the same value); the other
    // parameter forms always take the handler.
    const uint64_t off = static_cast<uint64_t>(in.imm);
    BasicBlock* fast = BasicBlock::Create(ctx_, "mem.fast", f_);
    Value* ok = b_.CreateICmpUGE(param_size_, C64(off + total));
    if (off % bytes != 0 || in.a[4] != kNoReg || vec != 1 || store) ok = b_.getFalse();
    b_.CreateCondBr(ok, fast, slow);
    b_.SetInsertPoint(fast);
    auto* ld = b_.CreateAlignedLoad(elem, b_.CreateConstInBoundsGEP1_64(i8_, params_, off),
                                    llvm::Align(1));
    TagMem(ld);
    StoreStorage(value_reg(0), Splat(b_.CreateZExt(ld, storage)));
    b_.CreateBr(done);
  } else {
    // The lanes' addresses are a register's plus the constant offset c (or c alone); the
    // register's facts are shared with the other accesses through it (AddressOf).
    AddrInfo absolute;
    const bool keep = AllOnes(m);  // check (this block) dominates the rest of the body
    AddrInfo& ai = in.a[4] == kNoReg ? absolute : AddressOf(in.a[4], in.flags & 1, keep);
    if (in.a[4] == kNoReg) {
      absolute.lo = absolute.hi = C64(0);
      absolute.rel = llvm::Constant::getNullValue(Vec(i32_));
      absolute.orx = C32(0);
    }
    Value* c = C64(static_cast<uint64_t>(in.imm));
    // lo + c and hi + c are the lowest and highest lane addresses unless some lanes' sums
    // wrap and others' do not; then lo + c > hi + c and the access takes the handler.
    Value* lo = b_.CreateAdd(ai.lo, c);
    Value* hi = b_.CreateAdd(ai.hi, c);
    Value* end = b_.CreateAdd(hi, C64(total));
    Value* ok = b_.CreateICmpEQ(
        b_.CreateAnd(b_.CreateOr(lo, b_.CreateZExt(ai.orx, i64_)), C64(total - 1)), C64(0));
    ok = b_.CreateAnd(ok, b_.CreateICmpULE(lo, hi));
    ok = b_.CreateAnd(ok, b_.CreateICmpUGE(end, hi));
    ok = b_.CreateAnd(ok, b_.CreateICmpULT(b_.CreateSub(ai.hi, ai.lo), C64(uint64_t{1} << 31)));
    Value* is_contig = Shape(ai, kContiguous + total, keep);
    Value* halves_contig = Shape(ai, kHalvesContiguous + total, keep);
    Value* halves_uniform = store ? nullptr : Shape(ai, kHalvesUniform, keep);
    Value* halves_equal = store ? nullptr : Shape(ai, kHalvesEqual, keep);
    Value* rel = ai.rel;
    // Lane 0's and lane 16's offsets from lo: the bases of the half-warp forms below.
    Value* lower = b_.CreateExtractElement(rel, uint64_t{0});
    Value* upper = b_.CreateExtractElement(rel, uint64_t{16});
    std::vector<int> low(16);  // lanes 0-15 of a warp's vector
    for (int i = 0; i < 16; ++i) low[i] = i;
    Value* base;
    if (d.space == NSpace::kShared) {
      ok = b_.CreateAnd(ok, b_.CreateICmpULE(end, shared_size_));
      base = b_.CreateInBoundsGEP(i8_, shared_, lo);
    } else {
      // The warp's translation cache {lo, hi, host}, then the slow lookup.
      auto load_cache = [&](int field, llvm::Type* ty) {
        auto* l = b_.CreateAlignedLoad(ty, b_.CreateConstInBoundsGEP1_64(i8_, cache_, 8 * field),
                                       llvm::Align(8));
        TagMem(l);
        return l;
      };
      Value* clo = load_cache(0, i64_);
      Value* chi = load_cache(1, i64_);
      Value* chost = load_cache(2, ptr_);
      Value* hit = b_.CreateAnd(ok, b_.CreateAnd(b_.CreateICmpUGE(lo, clo), b_.CreateICmpULE(end, chi)));
      BasicBlock* from_cache = b_.GetInsertBlock();
      BasicBlock* lookup = BasicBlock::Create(ctx_, "mem.lookup", f_);
      BasicBlock* have = BasicBlock::Create(ctx_, "mem.have", f_);
      Value* cached = b_.CreateGEP(i8_, chost, b_.CreateSub(lo, clo));
      b_.CreateCondBr(hit, have, lookup);
      b_.SetInsertPoint(lookup);
      auto* gty = llvm::FunctionType::get(ptr_, {ptr_, i64_, i64_}, false);
      Value* looked = b_.CreateCall(Helper(kHelperGlobalRange, gty), {w_, lo, end});
      Value* lok = b_.CreateAnd(ok, b_.CreateIsNotNull(looked));
      BasicBlock* from_lookup = b_.GetInsertBlock();
      b_.CreateCondBr(lok, have, slow);
      b_.SetInsertPoint(have);
      auto* phi = b_.CreatePHI(ptr_, 2);
      phi->addIncoming(cached, from_cache);
      phi->addIncoming(looked, from_lookup);
      base = phi;
      ok = b_.getTrue();
    }
    BasicBlock* fast = BasicBlock::Create(ctx_, "mem.fast", f_);
    b_.CreateCondBr(ok, fast, slow);
    b_.SetInsertPoint(fast);
    BasicBlock* uniform = BasicBlock::Create(ctx_, "mem.uniform", f_);
    BasicBlock* notuniform = BasicBlock::Create(ctx_, "mem.nu", f_);
    BasicBlock* contiguous = BasicBlock::Create(ctx_, "mem.contig", f_);
    BasicBlock* gather = BasicBlock::Create(ctx_, "mem.gather", f_);
    b_.CreateCondBr(b_.CreateICmpEQ(lo, hi), uniform, notuniform);
    // One address: lane 31's values win a store, as in the handler's lane order.
    b_.SetInsertPoint(uniform);
    for (uint32_t k = 0; k < vec; ++k) {
      Value* p = b_.CreateConstInBoundsGEP1_64(i8_, base, k * bytes);
      if (store) {
        Value* v = b_.CreateExtractElement(LoadStorage(value_reg(k), storage), uint64_t{31});
        TagMem(b_.CreateAlignedStore(b_.CreateTrunc(v, elem), p, llvm::Align(bytes)));
      } else {
        auto* l = b_.CreateAlignedLoad(elem, p, llvm::Align(bytes));
        TagMem(l);
        StoreStorage(value_reg(k), Splat(b_.CreateZExt(l, storage)));
      }
    }
    b_.CreateBr(done);
    // Consecutive lanes at consecutive addresses.
    b_.SetInsertPoint(notuniform);
    b_.CreateCondBr(is_contig, contiguous, gather);
    b_.SetInsertPoint(contiguous);
    llvm::Type* wide = llvm::FixedVectorType::get(elem, 32 * vec);
    if (store) {
      std::vector<Value*> parts;
      for (uint32_t k = 0; k < vec; ++k)
        parts.push_back(b_.CreateTrunc(LoadStorage(value_reg(k), storage), Vec(elem)));
      Value* all = parts[0];
      if (vec > 1) {
        // Concatenate, then interleave: element (lane i, part k) at i * vec + k.
        std::vector<int> cat2(64), cat4(128), mix(32 * vec);
        for (int i = 0; i < 64; ++i) cat2[i] = i;
        Value* ab = b_.CreateShuffleVector(parts[0], parts[1], cat2);
        if (vec == 4) {
          Value* cd = b_.CreateShuffleVector(parts[2], parts[3], cat2);
          for (int i = 0; i < 128; ++i) cat4[i] = i;
          all = b_.CreateShuffleVector(ab, cd, cat4);
        } else {
          all = ab;
        }
        for (uint32_t i = 0; i < 32; ++i)
          for (uint32_t k = 0; k < vec; ++k) mix[i * vec + k] = static_cast<int>(k * 32 + i);
        all = b_.CreateShuffleVector(all, mix);
      }
      TagMem(b_.CreateAlignedStore(all, base, llvm::Align(bytes)));
    } else {
      auto* l = b_.CreateAlignedLoad(wide, base, llvm::Align(bytes));
      TagMem(l);
      for (uint32_t k = 0; k < vec; ++k) {
        Value* part = l;
        if (vec > 1) {
          std::vector<int> pick(32);
          for (uint32_t i = 0; i < 32; ++i) pick[i] = static_cast<int>(i * vec + k);
          part = b_.CreateShuffleVector(l, pick);
        }
        StoreStorage(value_reg(k), b_.CreateZExt(part, Vec(storage)));
      }
    }
    b_.CreateBr(done);
    // Two runs of consecutive addresses, one per half-warp, either below the other: two
    // vector accesses. Stores write lanes 0-15 first: where the runs overlap, the higher
    // lane's value is the one left, as in the handler's lane order.
    {
      BasicBlock* two_runs = BasicBlock::Create(ctx_, "mem.tworuns", f_);
      BasicBlock* not_runs = BasicBlock::Create(ctx_, "mem.nr", f_);
      b_.SetInsertPoint(gather);
      b_.CreateCondBr(halves_contig, two_runs, not_runs);
      b_.SetInsertPoint(two_runs);
      Value* half_base[2] = {b_.CreateGEP(i8_, base, lower), b_.CreateGEP(i8_, base, upper)};
      llvm::Type* wide16 = llvm::FixedVectorType::get(elem, 16 * vec);
      std::vector<int> high(16), join(32);
      for (int i = 0; i < 16; ++i) high[i] = 16 + i;
      for (int i = 0; i < 32; ++i) join[i] = i;
      if (store) {
        for (int h = 0; h < 2; ++h) {
          std::vector<Value*> parts;
          for (uint32_t k = 0; k < vec; ++k) {
            Value* v = b_.CreateTrunc(LoadStorage(value_reg(k), storage), Vec(elem));
            parts.push_back(b_.CreateShuffleVector(v, h == 0 ? low : high));
          }
          // Element (lane i, part k) at i * vec + k, as the contiguous form writes it: the
          // parts concatenated pairwise (vec is 1, 2 or 4), then interleaved.
          while (parts.size() > 1) {
            std::vector<Value*> joined;
            for (size_t i = 0; i + 1 < parts.size(); i += 2) {
              const auto n = llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements();
              std::vector<int> cat(2 * n);
              for (size_t j = 0; j < cat.size(); ++j) cat[j] = static_cast<int>(j);
              joined.push_back(b_.CreateShuffleVector(parts[i], parts[i + 1], cat));
            }
            parts = std::move(joined);
          }
          Value* all = parts[0];
          if (vec > 1) {
            std::vector<int> mix(16 * vec);
            for (uint32_t i = 0; i < 16; ++i)
              for (uint32_t k = 0; k < vec; ++k) mix[i * vec + k] = static_cast<int>(k * 16 + i);
            all = b_.CreateShuffleVector(all, mix);
          }
          TagMem(b_.CreateAlignedStore(all, half_base[h], llvm::Align(bytes)));
        }
      } else {
        Value* l[2];
        for (int h = 0; h < 2; ++h) {
          auto* ld = b_.CreateAlignedLoad(wide16, half_base[h], llvm::Align(bytes));
          TagMem(ld);
          l[h] = ld;
        }
        for (uint32_t k = 0; k < vec; ++k) {
          Value* part[2];
          for (int h = 0; h < 2; ++h) {
            part[h] = l[h];
            if (vec > 1) {
              std::vector<int> pick(16);
              for (uint32_t i = 0; i < 16; ++i) pick[i] = static_cast<int>(i * vec + k);
              part[h] = b_.CreateShuffleVector(l[h], pick);
            }
          }
          Value* v = b_.CreateShuffleVector(part[0], part[1], join);
          StoreStorage(value_reg(k), b_.CreateZExt(v, Vec(storage)));
        }
      }
      b_.CreateBr(done);
      gather = not_runs;
    }
    // Loads of two addresses, one per half-warp: two loads and a blend.
    if (!store) {
      BasicBlock* halves = BasicBlock::Create(ctx_, "mem.halves", f_);
      BasicBlock* not_halves = BasicBlock::Create(ctx_, "mem.nh", f_);
      BasicBlock* repeated = BasicBlock::Create(ctx_, "mem.repeated", f_);
      BasicBlock* other = BasicBlock::Create(ctx_, "mem.other", f_);
      b_.SetInsertPoint(gather);
      b_.CreateCondBr(halves_uniform, halves, not_halves);
      b_.SetInsertPoint(halves);
      std::vector<int> split(32);
      for (int i = 0; i < 32; ++i) split[i] = i < 16 ? 0 : 32;
      for (uint32_t k = 0; k < vec; ++k) {
        auto* l0 = b_.CreateAlignedLoad(
            elem, b_.CreateGEP(i8_, base, b_.CreateAdd(lower, C32(k * bytes))), llvm::Align(bytes));
        auto* l1 = b_.CreateAlignedLoad(
            elem, b_.CreateGEP(i8_, base, b_.CreateAdd(upper, C32(k * bytes))), llvm::Align(bytes));
        TagMem(l0);
        TagMem(l1);
        Value* v = b_.CreateShuffleVector(Splat(b_.CreateZExt(l0, storage)),
                                          Splat(b_.CreateZExt(l1, storage)), split);
        StoreStorage(value_reg(k), v);
      }
      b_.CreateBr(done);
      // Lanes 16-31 repeat lanes 0-15's addresses: a 16-lane gather, used twice.
      b_.SetInsertPoint(not_halves);
      b_.CreateCondBr(halves_equal, repeated, other);
      b_.SetInsertPoint(repeated);
      std::vector<int> twice(32);
      for (int i = 0; i < 32; ++i) twice[i] = i & 15;
      Value* rel16 = b_.CreateShuffleVector(rel, low);
      Value* lanes16 = llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(16),
                                                      llvm::ConstantInt::getTrue(ctx_));
      for (uint32_t k = 0; k < vec; ++k) {
        Value* off = k == 0 ? rel16 : b_.CreateAdd(rel16, b_.CreateVectorSplat(16, C32(k * bytes)));
        auto* g = b_.CreateMaskedGather(llvm::FixedVectorType::get(elem, 16),
                                        b_.CreateGEP(i8_, base, off), llvm::Align(bytes), lanes16);
        TagMem(g);
        StoreStorage(value_reg(k), b_.CreateZExt(b_.CreateShuffleVector(g, twice), Vec(storage)));
      }
      b_.CreateBr(done);
      gather = other;
    }
    // Anything else: per-lane addresses (scatter stores in lane order).
    b_.SetInsertPoint(gather);
    Value* all_lanes = llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(32),
                                                      llvm::ConstantInt::getTrue(ctx_));
    for (uint32_t k = 0; k < vec; ++k) {
      // 32-bit offsets from one base: a gather of dword indices.
      Value* off = k == 0 ? rel : b_.CreateAdd(rel, Splat(C32(k * bytes)));
      Value* ptrs = b_.CreateGEP(i8_, base, off);
      if (store) {
        Value* v = b_.CreateTrunc(LoadStorage(value_reg(k), storage), Vec(elem));
        TagMem(b_.CreateMaskedScatter(v, ptrs, llvm::Align(bytes), all_lanes));
      } else {
        auto* g = b_.CreateMaskedGather(Vec(elem), ptrs, llvm::Align(bytes), all_lanes);
        TagMem(g);
        StoreStorage(value_reg(k), b_.CreateZExt(g, Vec(storage)));
      }
    }
    b_.CreateBr(done);
  }
  b_.SetInsertPoint(slow);
  // The handler writes only the loaded registers (forgotten by the fast paths' stores above),
  // so what is known of the other address registers still holds after it.
  std::map<std::pair<uint32_t, bool>, AddrInfo> known = std::move(addr_info_);
  CallHandlerIfAny(pc, m);
  addr_info_ = std::move(known);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

bool Gen::Emit(uint32_t pc, Value* active) {
  const Inst& in = img_.code[pc];
  const NativeDesc* d = desc_[pc];
  Value* m = LaneMask(in, active);
  if (d == nullptr) {
    CallHandlerIfAny(pc, m);
    return true;
  }
  switch (d->op) {
    case NOp::kBra: {
      const uint32_t target = static_cast<uint32_t>(in.aux);
      if (in.guard == kNoReg) {
        Goto(target);
        return false;
      }
      BasicBlock* taken = BasicBlock::Create(ctx_, "bra.taken", f_);
      BasicBlock* split = BasicBlock::Create(ctx_, "bra.split", f_);
      BasicBlock* diverge = BasicBlock::Create(ctx_, "bra.diverge", f_);
      BasicBlock* fall = BasicBlock::Create(ctx_, "bra.fall", f_);
      b_.CreateCondBr(b_.CreateICmpEQ(m, active), taken, split);
      b_.SetInsertPoint(taken);
      Goto(target);
      b_.SetInsertPoint(split);
      b_.CreateCondBr(b_.CreateICmpEQ(m, C32(0)), fall, diverge);
      b_.SetInsertPoint(diverge);
      CallHandler(pc, m);  // ExecBra diverges and returns true
      b_.CreateBr(dispatch_);
      b_.SetInsertPoint(fall);
      return true;
    }
    case NOp::kSetp:
      EmitSetp(in, *d, m);
      return true;
    case NOp::kSelp: {
      Value* p = MaskVec(LoadPred(in.a[3]));
      Dst(in.a[0], d->d, b_.CreateSelect(p, Src(in.a[1], d->d), Src(in.a[2], d->d)), m);
      return true;
    }
    case NOp::kPredLogic: {
      Value* a = LoadPred(in.a[1]);
      Value* b = in.a[2] != kNoReg ? LoadPred(in.a[2]) : C32(0);
      Value* v = d->k == 0   ? b_.CreateAnd(a, b)
                 : d->k == 1 ? b_.CreateOr(a, b)
                 : d->k == 2 ? b_.CreateXor(a, b)
                             : b_.CreateNot(a);
      DstPred(in.a[0], v, m);
      return true;
    }
    case NOp::kShiftImm:
    case NOp::kShift: {
      const Ty t = d->s;
      const bool left = d->k != 0;
      const uint32_t bits = 8 * TypeSize(t);
      Value* a = Src(in.a[1], t);
      llvm::Type* et = ElemTy(t);
      Value* r;
      if (d->op == NOp::kShiftImm) {
        Value* s = Splat(llvm::ConstantInt::get(et, static_cast<uint64_t>(in.imm)));
        r = left ? b_.CreateShl(a, s) : IsSigned(t) ? b_.CreateAShr(a, s) : b_.CreateLShr(a, s);
      } else {
        Value* sh = Src(in.a[2], Ty::kU32);
        Value* clamped = b_.CreateSelect(b_.CreateICmpULT(sh, Splat(C32(bits))), sh,
                                         Splat(C32(bits - 1)));
        Value* s = bits == 64 ? b_.CreateZExt(clamped, Vec(i64_)) : clamped;
        if (left || !IsSigned(t)) {
          Value* v = left ? b_.CreateShl(a, s) : b_.CreateLShr(a, s);
          r = b_.CreateSelect(b_.CreateICmpULT(sh, Splat(C32(bits))), v,
                              llvm::Constant::getNullValue(a->getType()));
        } else {
          r = b_.CreateAShr(a, s);
        }
      }
      Dst(in.a[0], t, r, m);
      return true;
    }
    case NOp::kExtend: {
      const bool d64 = in.flags & 1, s64 = in.flags & 2, sgn = in.flags & 4;
      const unsigned bits = in.n;
      Value* v = s64 ? LoadStorage(in.a[1], i64_)
                     : b_.CreateZExt(LoadStorage(in.a[1], i32_), Vec(i64_));
      if (bits > 0 && bits < 64) {
        Value* sh = Splat(C64(64 - bits));
        v = sgn ? b_.CreateAShr(b_.CreateShl(v, sh), sh)
                : b_.CreateAnd(v, Splat(C64((uint64_t{1} << bits) - 1)));
      }
      if (!d64) v = b_.CreateTrunc(v, Vec(i32_));
      Dst(in.a[0], d64 ? Ty::kU64 : Ty::kU32, v, m);
      return true;
    }
    case NOp::kAddImm64:
      Dst(in.a[0], Ty::kU64,
          b_.CreateAdd(LoadStorage(in.a[1], i64_), Splat(C64(static_cast<uint64_t>(in.imm)))),
          m);
      return true;
    case NOp::kCvta: {
      const bool to_generic = d->k & 1, src32 = d->k & 2, dst32 = d->k & 4;
      Value* a = src32 ? b_.CreateZExt(LoadStorage(in.a[1], i32_), Vec(i64_))
                       : LoadStorage(in.a[1], i64_);
      Value* v = to_generic ? b_.CreateAdd(a, Splat(C64(in.aux)))
                            : b_.CreateSub(a, Splat(C64(in.aux)));
      if (dst32) v = b_.CreateTrunc(v, Vec(i32_));
      Dst(in.a[0], dst32 ? Ty::kU32 : Ty::kU64, v, m);
      return true;
    }
    case NOp::kLd:
    case NOp::kSt:
      EmitMemory(pc, in, *d, m);
      return true;
    case NOp::kCvt:
      EmitCvt(in, *d, m);
      return true;
    case NOp::kShfl:
      EmitShfl(in, *d, m);
      return true;
    case NOp::kVote:
      EmitVote(in, m);
      return true;
    default:
      EmitLanewise(in, *d, m);
      return true;
  }
}

llvm::Function* Gen::Build(const std::string& name, const llvm::TargetMachine& tm,
                           JitStats* stats) {
  const uint32_t n = static_cast<uint32_t>(img_.code.size());
  stats->instructions = n;
  desc_.assign(n, nullptr);
  std::set<uint32_t> starts{0};
  for (uint32_t pc = 0; pc < n; ++pc) {
    const Inst& in = img_.code[pc];
    const NativeDesc* d = FindNative(in.fn);
    if (d != nullptr && Supported(*d, in)) desc_[pc] = d;
    if (desc_[pc] != nullptr) ++stats->native;
    if (d != nullptr && d->op == NOp::kBra) {
      starts.insert(static_cast<uint32_t>(in.aux));
      starts.insert(pc + 1);
    } else if (desc_[pc] == nullptr) {
      starts.insert(pc + 1);
      if (pc < img_.debug.size()) {
        if (!stats->calls.empty()) stats->calls += ", ";
        stats->calls += std::to_string(img_.debug[pc].line) + " " + img_.debug[pc].text;
      }
      if (in.fn == &ExecBraSpin) starts.insert(static_cast<uint32_t>(in.aux));
    }
  }
  for (const CallSite& c : img_.calls) starts.insert(c.callee_pc);
  starts.erase(n);
  for (auto it = starts.begin(); it != starts.end();) {
    it = *it > n ? starts.erase(it) : std::next(it);
  }
  stats->segments = static_cast<uint32_t>(starts.size());

  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptr_}, false);
  f_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, mod_);
  f_->addFnAttr("target-cpu", tm.getTargetCPU());
  f_->addFnAttr("target-features", tm.getTargetFeatureString());
  f_->addFnAttr("min-legal-vector-width", "512");
  f_->addFnAttr("prefer-vector-width", "512");
  f_->addFnAttr(llvm::Attribute::NoUnwind);
  args_ = f_->getArg(0);

  BasicBlock* entry = BasicBlock::Create(ctx_, "entry", f_);
  b_.SetInsertPoint(entry);
  auto field = [&](int i, llvm::Type* ty) -> Value* {
    static_assert(sizeof(void*) == 8 && sizeof(JitArgs) == 12 * 8);
    return b_.CreateAlignedLoad(ty, b_.CreateConstInBoundsGEP1_64(i8_, args_, 8 * i),
                                llvm::Align(8));
  };
  w_ = field(0, ptr_);
  regs_ = field(1, ptr_);
  // Field 2, the code, is read at each handler call (CallHandler).
  pcp_ = field(3, ptr_);
  activep_ = field(4, ptr_);
  nwp_ = field(5, ptr_);
  statep_ = field(6, ptr_);
  shared_ = field(7, ptr_);
  shared_size_ = field(8, i64_);
  params_ = field(9, ptr_);
  param_size_ = field(10, i64_);
  cache_ = field(11, ptr_);
  llvm::AllocaInst* budget = b_.CreateAlloca(i32_);
  b_.CreateStore(C32(4096), budget);

  dispatch_ = BasicBlock::Create(ctx_, "dispatch", f_);
  post_handler_ = BasicBlock::Create(ctx_, "post_handler", f_);
  exit_ = BasicBlock::Create(ctx_, "exit", f_);
  BasicBlock* interp = BasicBlock::Create(ctx_, "interp", f_);
  for (uint32_t s : starts) entries_[s] = BasicBlock::Create(ctx_, "seg" + std::to_string(s), f_);
  b_.CreateBr(dispatch_);

  b_.SetInsertPoint(exit_);
  b_.CreateRetVoid();

  auto running = [&]() {
    return b_.CreateICmpEQ(b_.CreateLoad(i8_, statep_),
                           llvm::ConstantInt::get(i8_, static_cast<uint8_t>(WarpState::kRunning)));
  };
  b_.SetInsertPoint(dispatch_);
  {
    BasicBlock* sw = BasicBlock::Create(ctx_, "switch", f_);
    b_.CreateCondBr(running(), sw, exit_);
    b_.SetInsertPoint(sw);
    llvm::SwitchInst* s = b_.CreateSwitch(b_.CreateLoad(i32_, pcp_), interp, entries_.size());
    for (auto& [pc, bb] : entries_) s->addCase(b_.getInt32(pc), bb);
  }
  b_.SetInsertPoint(interp);
  CallHelper(kHelperStep, w_);
  b_.CreateBr(dispatch_);

  b_.SetInsertPoint(post_handler_);
  {
    BasicBlock* go = BasicBlock::Create(ctx_, "after", f_);
    b_.CreateCondBr(running(), go, exit_);
    b_.SetInsertPoint(go);
    CallHelper(kHelperAfterHandler, w_);
    b_.CreateBr(dispatch_);
  }

  for (auto it = starts.begin(); it != starts.end(); ++it) {
    const uint32_t s = *it;
    const uint32_t e = std::next(it) == starts.end() ? n : *std::next(it);
    b_.SetInsertPoint(entries_[s]);
    // The interpreter loop's time slice and cancellation check.
    BasicBlock* go = BasicBlock::Create(ctx_, "go", f_);
    BasicBlock* stop = BasicBlock::Create(ctx_, "stopcheck", f_);
    Value* left = b_.CreateSub(b_.CreateLoad(i32_, budget), C32(1));
    b_.CreateStore(left, budget);
    b_.CreateCondBr(b_.CreateICmpEQ(left, C32(0)), stop, go);
    b_.SetInsertPoint(stop);
    b_.CreateStore(C32(4096), budget);
    auto* cty = llvm::FunctionType::get(i32_, {ptr_}, false);
    Value* stopped =
        b_.CreateCall(Helper(kHelperCheckStop, cty), {w_});
    b_.CreateCondBr(b_.CreateICmpNE(stopped, C32(0)), exit_, go);
    b_.SetInsertPoint(go);
    Value* nw = b_.CreateLoad(i32_, nwp_);
    BasicBlock* resched = BasicBlock::Create(ctx_, "resched", f_);
    BasicBlock* fits = BasicBlock::Create(ctx_, "fits", f_);
    BasicBlock* native = BasicBlock::Create(ctx_, "native", f_);
    b_.CreateCondBr(b_.CreateICmpUGE(C32(s), nw), resched, fits);
    b_.SetInsertPoint(resched);
    CallHelper(kHelperResched, w_);
    b_.CreateBr(dispatch_);
    // Lanes waiting inside the segment need the interpreter's per-instruction checks.
    b_.SetInsertPoint(fits);
    b_.CreateCondBr(b_.CreateICmpULT(nw, C32(e)), interp, native);
    b_.SetInsertPoint(native);
    Value* active = b_.CreateLoad(i32_, activep_);
    BasicBlock* full = BasicBlock::Create(ctx_, "full", f_);
    BasicBlock* part = BasicBlock::Create(ctx_, "partial", f_);
    b_.CreateCondBr(b_.CreateICmpEQ(active, C32(0xFFFFFFFFu)), full, part);
    for (int variant = 0; variant < 2; ++variant) {
      b_.SetInsertPoint(variant == 0 ? full : part);
      Value* act = variant == 0 ? C32(0xFFFFFFFFu) : active;
      ForgetAllAddresses();
      bool open = true;
      for (uint32_t pc = s; pc < e && open; ++pc) open = Emit(pc, act);
      if (open) Goto(e);
    }
  }

  if (llvm::verifyFunction(*f_, &llvm::errs())) return nullptr;
  return f_;
}

// The engine's version: part of every disk cache key. Raise it whenever the generated code
// could change for the same IR (the runtime's structures, helper signatures, pass pipeline).
constexpr const char* kEngineVersion = "pvgpu-jit-1";
constexpr const char* kEntryName = "pvgpu_kernel";

// One kernel's code: a JITDylib of its own (so that identical object code, which defines the
// same symbol, can be loaded more than once), removed when the last user lets go.
struct CodeHolder {
  llvm::orc::JITDylib* dylib = nullptr;
  std::string key;
  JitEntry entry = nullptr;
  ~CodeHolder();
};

// Live code by key: a kernel loaded again (a module loaded twice, several guests running the
// same program) shares it. Guarded by JitEngine::mu.
std::map<std::string, std::weak_ptr<CodeHolder>>& LiveCode() {
  static auto* m = new std::map<std::string, std::weak_ptr<CodeHolder>>;
  return *m;
}

CodeHolder::~CodeHolder() {
  if (dylib == nullptr) return;
  std::lock_guard<std::recursive_mutex> l(TheEngine().mu);
  auto it = LiveCode().find(key);
  if (it != LiveCode().end() && it->second.expired()) LiveCode().erase(it);
  llvm::consumeError(TheEngine().lljit->getExecutionSession().removeJITDylib(*dylib));
}

std::atomic<uint64_t> g_dylib_ids{0};

// The cache key: everything the object code depends on.
std::string CacheKey(const llvm::Module& mod, const llvm::TargetMachine& tm) {
  std::string text;
  llvm::raw_string_ostream os(text);
  mod.print(os, nullptr);
  os << "\n;cpu=" << tm.getTargetCPU() << "\n;features=" << tm.getTargetFeatureString()
     << "\n;llvm=" << LLVM_VERSION_STRING << "\n;engine=" << kEngineVersion << "\n";
  os.flush();
  auto hash = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  return llvm::toHex(hash, /*LowerCase=*/true);
}

// The size of the kernel's entry function in its object code (0 when it cannot be read).
uint64_t EntrySize(const llvm::MemoryBuffer& object) {
  auto file = llvm::object::ObjectFile::createObjectFile(object.getMemBufferRef());
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  auto* elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(file->get());
  if (elf == nullptr) return 0;
  for (const llvm::object::ELFSymbolRef& sym : elf->symbols()) {
    auto name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name == kEntryName) return sym.getSize();
  }
  return 0;
}

// PVGPU_JIT_PERF=1: every kernel's code, as it is linked, goes into /tmp/perf-PID.map (the file
// where `perf report` looks up the names of JIT code) as pvgpu:KERNEL.
void NoteForPerf(uint64_t start, uint64_t size, const std::string& kernel) {
  const char* on = std::getenv("PVGPU_JIT_PERF");
  if (on == nullptr || on[0] == '\0' || std::string_view(on) == "0" || size == 0 ||
      kernel.empty())
    return;
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  if (FILE* f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%" PRIx64 " %" PRIx64 " pvgpu:%s\n", start, size, kernel.c_str());
    std::fclose(f);
  }
}

// Links object code into a new JITDylib that also defines the helpers.
StatusOr<std::shared_ptr<CodeHolder>> Link(JitEngine& e, const std::string& key,
                                           const std::string& kernel,
                                           std::unique_ptr<llvm::MemoryBuffer> object) {
  const uint64_t entry_size = EntrySize(*object);
  auto holder = std::make_shared<CodeHolder>();
  holder->key = key;
  auto jd = e.lljit->createJITDylib("pvgpu_k" + std::to_string(g_dylib_ids.fetch_add(1)));
  if (!jd) return Status(Code::kUnknown, llvm::toString(jd.takeError()));
  holder->dylib = &*jd;
  const JitHelpers& h = TheJitHelpers();
  auto sym = [&](const char* name, auto* fn) {
    return std::pair{e.lljit->mangleAndIntern(name),
                     llvm::orc::ExecutorSymbolDef(llvm::orc::ExecutorAddr::fromPtr(fn),
                                                  llvm::JITSymbolFlags::Exported |
                                                      llvm::JITSymbolFlags::Callable)};
  };
  llvm::orc::SymbolMap helpers;
  for (auto def : {sym(kHelperStep, h.step), sym(kHelperResched, h.resched),
                   sym(kHelperAfterHandler, h.after_handler),
                   sym(kHelperCheckStop, h.check_stop),
                   sym(kHelperGlobalRange, h.global_range)}) {
    helpers.insert(def);
  }
  if (llvm::Error err = jd->define(llvm::orc::absoluteSymbols(std::move(helpers)))) {
    return Status(Code::kUnknown, llvm::toString(std::move(err)));
  }
  if (llvm::Error err = e.lljit->addObjectFile(*jd, std::move(object))) {
    return Status(Code::kUnknown, llvm::toString(std::move(err)));
  }
  auto entry = e.lljit->lookup(*jd, kEntryName);
  if (!entry) return Status(Code::kUnknown, llvm::toString(entry.takeError()));
  holder->entry = entry->toPtr<JitEntry>();
  NoteForPerf(entry->getValue(), entry_size, kernel);
  return holder;
}

}  // namespace

bool JitAvailable() { return TheEngine().lljit != nullptr; }

bool JitDiskCacheEnabled() { return JitDiskCache::Get().enabled(); }

StatusOr<CompiledCode> CompileImage(const KernelImage& img, bool use_cache) {
  JitEngine& e = TheEngine();
  if (!e.lljit) return Status(Code::kNotSupported, "the compiling engine failed to start: " + e.error);
  const auto t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = std::make_unique<llvm::Module>("pvgpu_" + img.name, *ctx);
  CompiledCode out;
  auto done = [&](std::shared_ptr<CodeHolder> holder, JitOrigin origin) {
    out.entry = holder->entry;
    out.keep_alive = std::move(holder);
    out.stats.origin = origin;
    out.stats.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  };
  // One compilation at a time (JitEngine::mu).
  std::lock_guard<std::recursive_mutex> l(e.mu);
  mod->setDataLayout(e.tm->createDataLayout());
  mod->setTargetTriple(e.tm->getTargetTriple().str());
  Gen gen(*ctx, *mod, img);
  if (gen.Build(kEntryName, *e.tm, &out.stats) == nullptr)
    return Status(Code::kUnknown, "generated code for kernel " + img.name + " is invalid");
  const std::string key = CacheKey(*mod, *e.tm);
  if (use_cache) {
    auto it = LiveCode().find(key);
    if (it != LiveCode().end()) {
      if (auto holder = it->second.lock()) return done(std::move(holder), JitOrigin::kMemory);
    }
    if (auto object = JitDiskCache::Get().Load(key)) {
      auto holder =
          Link(e, key, img.name, llvm::MemoryBuffer::getMemBufferCopy(*object, img.name));
      if (holder.ok()) {
        LiveCode()[key] = *holder;
        return done(std::move(*holder), JitOrigin::kDisk);
      }
      PVGPU_WARN("ptx jit: cached code for kernel " << img.name << " does not link ("
                                                    << holder.status().message()
                                                    << "); compiling it again");
    }
  }
  // PVGPU_JIT_DUMP=DIR: each kernel's IR before and after optimization, for debugging.
  const char* dump = std::getenv("PVGPU_JIT_DUMP");
  auto write = [&](const char* suffix) {
    std::error_code ec;
    llvm::raw_fd_ostream os(std::string(dump) + "/" + key.substr(0, 16) + "." + img.name + suffix,
                            ec);
    if (!ec) mod->print(os, nullptr);
  };
  if (dump != nullptr) write(".ll");
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(e.tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(*mod, mam);
  if (dump != nullptr) write(".opt.ll");
  llvm::orc::SimpleCompiler compiler(*e.tm);
  auto object = compiler(*mod);
  if (!object) {
    return Status(Code::kUnknown, "compiling kernel " + img.name + ": " +
                                       llvm::toString(object.takeError()));
  }
  if (use_cache) JitDiskCache::Get().Store(key, (*object)->getBuffer());
  // Not the engine's own warm-up kernel (the only one compiled without the caches) in the
  // perf map: its code is released at once, and perf would name what reuses its addresses
  // after it.
  auto holder = Link(e, key, use_cache ? img.name : std::string(), std::move(*object));
  if (!holder.ok()) {
    return Status(Code::kUnknown,
                  "linking kernel " + img.name + ": " + std::string(holder.status().message()));
  }
  LiveCode()[key] = *holder;
  return done(std::move(*holder), JitOrigin::kCompiled);
}

}  // namespace pvgpu::ptx
