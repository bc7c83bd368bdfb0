// Function-level lowering: scopes, declarations, frames, labels, calls and the per-kernel
// image assembly. Instruction semantics live in the ops_*.cc families.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "ptx/handlers.h"
#include "ptx/lexer.h"
#include "ptx/lower.h"
#include "ptx/program.h"

namespace pvgpu::ptx {
namespace {

constexpr uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) & ~(a - 1); }
constexpr uint32_t SlotBytes(char cls) {
  return cls == 'p' ? 4 : cls == 'w' ? 128 : cls == 'q' ? 512 : 256;
}
// Per-thread stack budget for (possibly) recursive call chains.
constexpr uint32_t kRecursionStackBytes = 16 * 1024;
constexpr uint64_t kMaxLocalBytes = 512 * 1024;

}  // namespace

// Size and alignment of a .param/.local variable.
Status VarLayout(const ast::VarDecl& d, uint64_t* size, uint32_t* align) {
  Ty t = ParseType(d.type);
  uint32_t es = TypeSize(t);
  if (es == 0) es = 1;
  uint64_t n = d.vector;
  for (uint64_t x : d.dims) n *= x;
  *size = n * es;
  *align = d.align ? d.align : es * d.vector;
  if (*align == 0) *align = 1;
  if (*size > kMaxLocalBytes)
    return PtxErrorAt(d.line, d.col, "variable " + d.name + " is too large");
  return Status::Ok();
}

// Frame layout of a .func's formals: return values first, then parameters.
static Status FormalLayout(const ast::Function& f, std::vector<uint32_t>* ret_offs,
                           std::vector<uint32_t>* param_offs, uint32_t* end) {
  uint32_t cur = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const auto& list = pass == 0 ? f.rets : f.params;
    for (const auto& d : list) {
      uint64_t size;
      uint32_t align;
      PVGPU_TRY(VarLayout(d, &size, &align));
      cur = AlignUp(cur, align);
      (pass == 0 ? ret_offs : param_offs)->push_back(cur);
      cur += static_cast<uint32_t>(size);
    }
  }
  *end = cur;
  return Status::Ok();
}

Status LowerCtx::DeclareLocal(const ast::VarDecl& d) {
  Sym s;
  s.ty = ParseType(d.type);
  switch (d.space) {
    case ast::Space::kReg: {
      if (s.ty == Ty::kNone || d.vector != 1 || d.has_dims)
        return PtxErrorAt(d.line, d.col, "unsupported register declaration " + d.name);
      s.kind = Sym::Kind::kReg;
      s.cls = ClassOf(s.ty);
      uint32_t count = d.is_range ? d.range_count : 1;
      if (count == 0) return Status::Ok();
      s.off = AllocReg(s.cls);
      for (uint32_t i = 1; i < count; ++i) AllocReg(s.cls);
      // Ranges of one class are contiguous because AllocReg only ever aligns within a class
      // and every slot size is a multiple of its alignment; predicates are 4-byte packed.
      s.count = d.is_range ? count : 0;
      auto& fs = funcs_[cur_func_];
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t off = s.off + i * SlotBytes(s.cls);
        if (s.cls == 'q') {  // saved as its two 64-bit halves
          fs.regs.push_back({off, 8u});
          fs.regs.push_back({off + 256, 8u});
          continue;
        }
        fs.regs.push_back({off, s.cls == 'd' ? 8u : s.cls == 'p' ? 1u : 4u});
      }
      // A warp's registers, all its lanes: 16 MiB hold some 36,000 32-bit registers a thread,
      // which the largest unrolled kernels NVIDIA's libraries ship declare (cuSOLVER's getrf).
      // What a block of them may hold is checked at launch.
      if (img_.reg_bytes > (16u << 20)) return PtxErrorAt(d.line, d.col, "too many registers");
      scopes_.back()[d.name] = s;
      return Status::Ok();
    }
    case ast::Space::kLocal:
    case ast::Space::kParam: {
      uint64_t size;
      uint32_t align;
      PVGPU_TRY(VarLayout(d, &size, &align));
      frame_cursor_ = AlignUp(frame_cursor_, std::min<uint32_t>(align, 256));
      s.kind = Sym::Kind::kFrame;
      s.off = frame_cursor_;
      s.size = static_cast<uint32_t>(size);
      frame_cursor_ += static_cast<uint32_t>(size);
      if (frame_cursor_ > kMaxLocalBytes)
        return Error(Code::kLaunchOutOfResources,
                     "line " + std::to_string(d.line) + ": local memory too large");
      scopes_.back()[d.name] = s;
      return Status::Ok();
    }
    case ast::Space::kShared: {
      uint64_t size;
      uint32_t align;
      PVGPU_TRY(VarLayout(d, &size, &align));
      prog_.shared_vars_[d.name] = {size, align, d.has_dims && !d.dims.empty() && d.dims[0] == 0};
      Sym m;
      m.kind = Sym::Kind::kShared;
      m.off = UINT32_MAX;
      module_syms_[d.name] = m;
      return SharedSym(d.name).status();
    }
    default:
      return PtxErrorAt(d.line, d.col, "unsupported declaration " + d.name);
  }
}

StatusOr<uint32_t> LowerCtx::AddCallSite(int callee, const std::vector<ast::Operand>& args,
                                         const std::vector<ast::Operand>& rets) {
  const ast::Function& f = mod_.functions[callee];
  std::vector<uint32_t> ret_offs, param_offs;
  uint32_t end;
  PVGPU_TRY(FormalLayout(f, &ret_offs, &param_offs, &end));
  if (args.size() != f.params.size() || rets.size() != f.rets.size())
    return Err("call to " + f.name + " has the wrong number of arguments");
  // An actual argument or result of the caller bound to the callee's formal: where it lies in
  // the caller's frame, and how many bytes to copy (the smaller of the two).
  auto bind = [&](const ast::Operand& actual, const auto& formal, uint32_t* at,
                  uint32_t* bytes) -> Status {
    uint32_t actual_size;
    PVGPU_ASSIGN_OR_RETURN(*at, FrameSymOffset(actual, &actual_size));
    uint64_t formal_size;
    uint32_t formal_align;
    PVGPU_TRY(VarLayout(formal, &formal_size, &formal_align));
    *bytes = std::min<uint32_t>(actual_size, static_cast<uint32_t>(formal_size));
    return Status::Ok();
  };
  CallSite site;
  for (size_t i = 0; i < args.size(); ++i) {
    uint32_t from = 0, bytes = 0;
    PVGPU_TRY(bind(args[i], f.params[i], &from, &bytes));
    site.args.push_back({from, param_offs[i], bytes});
  }
  for (size_t i = 0; i < rets.size(); ++i) {
    uint32_t to = 0, bytes = 0;
    PVGPU_TRY(bind(rets[i], f.rets[i], &to, &bytes));
    site.rets.push_back({ret_offs[i], to, bytes});
  }
  uint32_t idx = static_cast<uint32_t>(img_.calls.size());
  img_.calls.push_back(std::move(site));
  pending_calls_.push_back({idx, callee, cur_func_});
  call_graph_[cur_func_].push_back(callee);
  if (!funcs_[callee].lowered &&
      std::find(worklist_.begin(), worklist_.end(), callee) == worklist_.end())
    worklist_.push_back(callee);
  return idx;
}

StatusOr<uint32_t> LowerCtx::AddIndirectTargets(const std::vector<ast::Operand>& args,
                                                const std::vector<ast::Operand>& rets) {
  // Address-taken functions: named by an operand anywhere or by a global initializer.
  std::vector<char> taken(mod_.functions.size(), 0);
  std::unordered_map<std::string, int> by_name;
  for (size_t f = 0; f < mod_.functions.size(); ++f)
    by_name[mod_.functions[f].name] = static_cast<int>(f);
  for (const auto& g : mod_.globals)
    for (const auto& in : g.init)
      if (in.is_symbol && by_name.count(in.symbol)) taken[by_name[in.symbol]] = 1;
  for (const auto& f : mod_.functions)
    for (const auto& st : f.body)
      if (st.kind == ast::Statement::Kind::kInst && st.inst.opcode != "call")
        for (const auto& o : st.inst.ops)
          if (o.kind == ast::Operand::Kind::kSymbol && by_name.count(o.name))
            taken[by_name[o.name]] = 1;
  IndirectTargets targets;
  for (size_t f = 0; f < mod_.functions.size(); ++f) {
    const ast::Function& fn = mod_.functions[f];
    if (!taken[f] || fn.is_entry || !fn.has_body || fn.params.size() != args.size() ||
        fn.rets.size() != rets.size())
      continue;
    PVGPU_ASSIGN_OR_RETURN(uint32_t site, AddCallSite(static_cast<int>(f), args, rets));
    targets.push_back({kFuncWindow + 16 * f, site});
  }
  img_.indirect.push_back(std::move(targets));
  return static_cast<uint32_t>(img_.indirect.size() - 1);
}

Status LowerCtx::LowerFunction(int fi) {
  const ast::Function& f = mod_.functions[fi];
  FuncState& fs = funcs_[fi];
  fs.lowered = true;
  fs.entry_pc = static_cast<uint32_t>(img_.code.size());
  cur_func_ = fi;
  cur_ = nullptr;
  scopes_.clear();
  scopes_.emplace_back();
  labels_.clear();
  pending_labels_.clear();
  frame_cursor_ = 0;
  if (in_kernel_) {
    uint32_t cur = 0;
    for (const auto& d : f.params) {
      uint64_t size;
      uint32_t align;
      PVGPU_TRY(VarLayout(d, &size, &align));
      cur = AlignUp(cur, align);
      Sym s;
      s.kind = Sym::Kind::kKParam;
      s.off = cur;
      s.size = static_cast<uint32_t>(size);
      s.ty = ParseType(d.type);
      scopes_.back()[d.name] = s;
      cur += static_cast<uint32_t>(size);
    }
  } else {
    std::vector<uint32_t> ret_offs, param_offs;
    PVGPU_TRY(FormalLayout(f, &ret_offs, &param_offs, &frame_cursor_));
    for (size_t pass = 0; pass < 2; ++pass) {
      const auto& list = pass == 0 ? f.rets : f.params;
      const auto& offs = pass == 0 ? ret_offs : param_offs;
      for (size_t i = 0; i < list.size(); ++i) {
        uint64_t size;
        uint32_t align;
        PVGPU_TRY(VarLayout(list[i], &size, &align));
        Sym s;
        s.kind = Sym::Kind::kFrame;
        s.off = offs[i];
        s.size = static_cast<uint32_t>(size);
        s.ty = ParseType(list[i].type);
        scopes_.back()[list[i].name] = s;
      }
    }
  }
  const OpTable& table = GlobalOpTable();
  for (const ast::Statement& st : f.body) {
    switch (st.kind) {
      case ast::Statement::Kind::kOpen:
        scopes_.emplace_back();
        break;
      case ast::Statement::Kind::kClose:
        if (scopes_.size() > 1) scopes_.pop_back();
        break;
      case ast::Statement::Kind::kDecl:
        PVGPU_TRY(DeclareLocal(st.decl));
        break;
      case ast::Statement::Kind::kLabel:
        if (labels_.count(st.label))
          return PtxErrorAt(st.line, st.col, "duplicate label " + st.label);
        labels_[st.label] = static_cast<uint32_t>(img_.code.size());
        break;
      case ast::Statement::Kind::kInst: {
        cur_ = &st.inst;
        guard_ = kNoReg;
        guard_neg_ = st.inst.guard_neg;
        if (!st.inst.guard.empty()) {
          uint32_t off;
          const Sym* s = Lookup(st.inst.guard, &off);
          if (!s || s->kind != Sym::Kind::kReg || s->cls != 'p')
            return Err("unknown guard predicate " + st.inst.guard);
          guard_ = off;
        }
        LowerFn fn = table.Find(st.inst.opcode);
        if (!fn) return Unsupported();
        fixups_.clear();
        PVGPU_TRY(fn(*this));
        if (!fixups_.empty()) return Err("internal: unflushed destination fixup");
        break;
      }
    }
  }
  // Falling off the end of a body returns (kernels exit).
  cur_ = nullptr;
  guard_ = kNoReg;
  guard_neg_ = false;
  Inst ret;
  ret.fn = ExecRet;
  EmitUnguarded(ret);
  for (const auto& p : pending_labels_) {
    auto it = labels_.find(p.label);
    if (it == labels_.end()) return PtxErrorAt(p.line, p.col, "unknown label " + p.label);
    img_.code[p.pc].aux = it->second;
  }
  MarkSpinLoops();
  fs.frame = AlignUp(frame_cursor_, 16);
  return Status::Ok();
}

void LowerCtx::MarkSpinLoops() {
  for (const auto& p : pending_labels_) {
    Inst& in = img_.code[p.pc];
    const uint32_t target = static_cast<uint32_t>(in.aux);
    if (in.fn != ExecBra || target > p.pc) continue;
    auto poll = std::lower_bound(poll_pcs_.begin(), poll_pcs_.end(), target);
    if (poll != poll_pcs_.end() && *poll <= p.pc) in.fn = ExecBraSpin;
  }
}

Status LowerCtx::LowerKernel(int fi) {
  in_kernel_ = true;
  PVGPU_TRY(LowerFunction(fi));
  img_.frame_bytes = funcs_[fi].frame;
  in_kernel_ = false;
  for (size_t i = 0; i < worklist_.size(); ++i) {
    int callee = worklist_[i];
    if (funcs_[callee].lowered) continue;
    if (!mod_.functions[callee].has_body)
      return Error(Code::kInvalidPtx, "function " + mod_.functions[callee].name +
                                          " has no body (extern functions are not supported)");
    PVGPU_TRY(LowerFunction(callee));
  }
  // Recursion: a function is recursive when it can reach itself.
  const size_t nf = mod_.functions.size();
  std::vector<char> recursive(nf, 0);
  for (size_t f = 0; f < nf; ++f) {
    if (!funcs_[f].lowered) continue;
    std::vector<char> seen(nf, 0);
    std::vector<int> stack(call_graph_[f].begin(), call_graph_[f].end());
    while (!stack.empty()) {
      int g = stack.back();
      stack.pop_back();
      if (g == static_cast<int>(f)) {
        recursive[f] = 1;
        break;
      }
      if (seen[g]) continue;
      seen[g] = 1;
      for (int h : call_graph_[g]) stack.push_back(h);
    }
    if (recursive[f]) img_.recursive = true;
  }
  // A recursive function's frame ends with the area where its registers are saved when it is
  // entered again, so frames are [locals and params | saved registers].
  std::vector<uint32_t> save_bytes(nf, 0), full_frame(nf, 0);
  for (size_t f = 0; f < nf; ++f) {
    if (!funcs_[f].lowered) continue;
    if (recursive[f])
      for (const auto& r : funcs_[f].regs) save_bytes[f] += r.second;
    full_frame[f] = AlignUp(funcs_[f].frame + save_bytes[f], 16);
  }
  for (const auto& pc : pending_calls_) {
    CallSite& s = img_.calls[pc.site];
    s.callee_pc = funcs_[pc.callee].entry_pc;
    s.caller_frame = full_frame[pc.caller];
    s.callee_frame = full_frame[pc.callee];
    if (recursive[pc.callee]) {
      s.save_offset = funcs_[pc.callee].frame;
      s.saved_regs = funcs_[pc.callee].regs;
      s.save_bytes = save_bytes[pc.callee];
    }
  }
  // Per-thread local memory: the kernel frame plus the deepest call chain.
  std::function<uint64_t(int, int)> deepest = [&](int f, int depth) -> uint64_t {
    if (depth > 64) return 0;
    uint64_t best = 0;
    for (const auto& pc : pending_calls_)
      if (pc.caller == f)
        best = std::max<uint64_t>(best,
                                  img_.calls[pc.site].callee_frame + deepest(pc.callee, depth + 1));
    return best;
  };
  uint64_t local = img_.frame_bytes;
  if (img_.recursive)
    local += kRecursionStackBytes;
  else
    local += deepest(fi, 0);
  if (local > kMaxLocalBytes)
    return Error(Code::kLaunchOutOfResources, "kernel needs too much local memory");
  img_.local_bytes = AlignUp(static_cast<uint32_t>(local), 16);
  img_.static_shared = AlignUp(shared_cursor_, 16);
  return Status::Ok();
}

const OpTable& GlobalOpTable() {
  static const OpTable table = [] {
    OpTable t;
    RegisterArith(t);
    RegisterBits(t);
    RegisterCompare(t);
    RegisterConvert(t);
    RegisterMemory(t);
    RegisterAtomic(t);
    RegisterWarp(t);
    RegisterMath(t);
    RegisterControl(t);
    RegisterHalf(t);
    RegisterTexture(t);
    RegisterAsync(t);
    RegisterMma(t);
    return t;
  }();
  return table;
}

}  // namespace pvgpu::ptx
