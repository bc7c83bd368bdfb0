// Control flow: bra, brx.idx, call/ret (with .param frames in per-thread local memory), exit,
// trap.
// Handlers that move lanes to different pcs write lane_pc and let Reschedule pick the group.
#include <chrono>
#include <cstdio>

#include "ptx/exec_util.h"
#include "ptx/handlers.h"
#include "ptx/memory.h"
#include "ptx/program.h"

namespace pvgpu::ptx {

bool IsBuiltinExternal(std::string_view name) {
  return name == "vprintf" || name == "__assertfail" || DeviceRuntimeBuiltin(name) != nullptr;
}

bool ExecBuiltinPrintf(const Inst& in, Warp& w, uint32_t m);
bool ExecBuiltinAssert(const Inst& in, Warp& w, uint32_t m);

bool ExecBra(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE(&ExecBra, NOp::kBra);
  const uint32_t target = static_cast<uint32_t>(in.aux);
  if (m == w.active) {
    w.pc = target;
    return true;
  }
  for (uint32_t t = w.active; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    w.lane_pc[i] = ((m >> i) & 1) ? target : w.pc + 1;
  }
  w.active = 0;
  w.Reschedule();
  return true;
}

bool ExecBraSpin(const Inst& in, Warp& w, uint32_t m) {
  ExecBra(in, w, m);
  if (w.launch->config.cooperative && w.state == WarpState::kRunning &&
      ++w.spins >= kSpinsPerYield) {
    w.spins = 0;
    w.state = WarpState::kYielded;
  }
  return true;
}

namespace {

constexpr size_t kMaxCallDepth = 1024;

// Lanes in `gone` leave the warp; the other active lanes continue after the instruction.
void ExitLanes(Warp& w, uint32_t gone) {
  w.live &= ~gone;
  w.blocked &= ~gone;
  for (uint32_t t = gone; t; t &= t - 1) w.stack[__builtin_ctz(t)].clear();
  w.block->live_threads -= static_cast<uint32_t>(__builtin_popcount(gone));
  for (int id = 0; id < kNumBarriers; ++id) {
    w.bar_wait[id] &= ~gone;
    if (w.block->bars[id].arrived) w.block->MaybeRelease(id);
  }
}

// Enters call site `site_index` for lane i. Returns false after reporting a fault.
bool EnterCall(const Inst& in, Warp& w, int i, uint32_t site_index) {
  const CallSite& site = w.launch->image->calls[site_index];
  uint8_t* r = w.regs;
  const uint32_t fp_slot = w.launch->image->sp.fp;
  uint64_t fp = LoadReg<uint64_t>(r, fp_slot, i);
  uint64_t nfp = fp + site.caller_frame;
  if (nfp + site.callee_frame > w.local_stride || w.stack[i].size() >= kMaxCallDepth) {
    w.Fault(Code::kHardwareStackError, in, i, "call stack overflow");
    return false;
  }
  uint8_t* base = w.local + static_cast<size_t>(i) * w.local_stride;
  for (const CallCopy& cp : site.args)
    std::memmove(base + nfp + cp.to, base + fp + cp.from, cp.size);
  uint8_t* save = base + nfp + site.save_offset;
  for (const auto& [off, bytes] : site.saved_regs) {
    // bytes == 1 marks a predicate: its lane bit is saved as one byte.
    uint64_t v = bytes == 8   ? LoadReg<uint64_t>(r, off, i)
                 : bytes == 4 ? LoadReg<uint32_t>(r, off, i)
                              : (*RegPtr<uint32_t>(r, off) >> i) & 1;
    std::memcpy(save, &v, bytes);
    save += bytes;
  }
  StoreReg<uint64_t>(r, fp_slot, i, nfp);
  w.stack[i].push_back(Frame{w.pc + 1, site_index});
  w.lane_pc[i] = site.callee_pc;
  return true;
}

bool FinishCall(Warp& w, uint32_t m) {
  for (uint32_t t = w.active & ~m; t; t &= t - 1) w.lane_pc[__builtin_ctz(t)] = w.pc + 1;
  w.active = 0;
  w.has_called = true;
  w.Reschedule();
  return true;
}

bool ExecCall(const Inst& in, Warp& w, uint32_t m) {
  for (uint32_t t = m; t; t &= t - 1)
    if (!EnterCall(in, w, __builtin_ctz(t), static_cast<uint32_t>(in.aux))) return true;
  return FinishCall(w, m);
}

// call through a register: a[0] holds the function address; aux indexes image.indirect.
bool ExecCallIndirect(const Inst& in, Warp& w, uint32_t m) {
  const IndirectTargets& targets = w.launch->image->indirect[in.aux];
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    uint64_t addr = LoadReg<uint64_t>(w.regs, in.a[0], i);
    const std::pair<uint64_t, uint32_t>* hit = nullptr;
    for (const auto& e : targets)
      if (e.first == addr) hit = &e;
    if (!hit) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "indirect call to invalid address 0x%llx",
                    static_cast<unsigned long long>(addr));
      w.Fault(Code::kIllegalInstruction, in, i, buf);
      return true;
    }
    if (!EnterCall(in, w, i, hit->second)) return true;
  }
  return FinishCall(w, m);
}

}  // namespace

bool ExecRet(const Inst& in, Warp& w, uint32_t m) {
  const KernelImage& img = *w.launch->image;
  uint8_t* r = w.regs;
  uint32_t gone = 0;
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    if (w.stack[i].empty()) {
      gone |= 1u << i;
      continue;
    }
    Frame f = w.stack[i].back();
    w.stack[i].pop_back();
    const CallSite& site = img.calls[f.callsite];
    uint64_t fp = LoadReg<uint64_t>(r, img.sp.fp, i);
    uint64_t cfp = fp - site.caller_frame;
    uint8_t* base = w.local + static_cast<size_t>(i) * w.local_stride;
    for (const CallCopy& cp : site.rets)
      std::memmove(base + cfp + cp.to, base + fp + cp.from, cp.size);
    uint8_t* save = base + fp + site.save_offset;
    for (const auto& [off, bytes] : site.saved_regs) {
      uint64_t v = 0;
      std::memcpy(&v, save, bytes);
      save += bytes;
      if (bytes == 8) {
        StoreReg<uint64_t>(r, off, i, v);
      } else if (bytes == 4) {
        StoreReg<uint32_t>(r, off, i, static_cast<uint32_t>(v));
      } else {
        uint32_t& p = *RegPtr<uint32_t>(r, off);
        p = (p & ~(1u << i)) | (static_cast<uint32_t>(v & 1) << i);
      }
    }
    StoreReg<uint64_t>(r, img.sp.fp, i, cfp);
    w.lane_pc[i] = f.ret_pc;
  }
  if (gone && !w.async_copies.empty() && !FinishAsyncCopies(in, w, gone)) return true;
  for (uint32_t t = w.active & ~m; t; t &= t - 1) w.lane_pc[__builtin_ctz(t)] = w.pc + 1;
  w.active = 0;
  if (gone) ExitLanes(w, gone);
  w.Reschedule();
  return true;
}

bool ExecExit(const Inst& in, Warp& w, uint32_t m) {
  if (!w.async_copies.empty() && !FinishAsyncCopies(in, w, m)) return true;
  for (uint32_t t = w.active & ~m; t; t &= t - 1) w.lane_pc[__builtin_ctz(t)] = w.pc + 1;
  w.active = 0;
  ExitLanes(w, m);
  w.Reschedule();
  return true;
}

namespace {

bool ExecTrap(const Inst& in, Warp& w, uint32_t m) {
  w.Fault(Code::kLaunchFailed, in, __builtin_ctz(m), "trap instruction executed");
  return true;
}

bool ExecNoOp(const Inst&, Warp&, uint32_t) { return false; }

Status LowerBra(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(1));
  Inst in;
  in.fn = ExecBra;
  return c.EmitBranch(in, c.ops()[0]);
}

// brx.idx{.uni} index, tlist: the instruction is followed by one table entry per label of
// tlist (n entries, each an unexecuted branch whose aux is the label's pc). Lanes the guard
// excludes continue after the table.
bool ExecBrxIdx(const Inst& in, Warp& w, uint32_t m) {
  const uint32_t pc = w.pc, after = pc + 1 + in.n;
  for (uint32_t t = w.active; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    if (!((m >> i) & 1)) {
      w.lane_pc[i] = after;
      continue;
    }
    uint32_t idx = LoadReg<uint32_t>(w.regs, in.a[1], i);
    if (idx >= in.n) {
      w.Fault(Code::kIllegalInstruction, in, i,
              "brx.idx index " + std::to_string(idx) + " is out of range of its " +
                  std::to_string(in.n) + " targets");
      return true;
    }
    w.lane_pc[i] = static_cast<uint32_t>(w.code[pc + 1 + idx].aux);
  }
  w.active = 0;
  w.Reschedule();
  return true;
}

Status LowerBrx(LowerCtx& c) {
  if (!c.Has(".idx")) return c.Unsupported();
  PVGPU_TRY(c.NeedOps(2));
  const ast::Operand& list = c.ops()[1];
  const auto& lists = c.module().functions[c.current_func()].branch_targets;
  const std::vector<ast::Operand>* labels = nullptr;
  for (const auto& [name, targets] : lists)
    if (list.kind == ast::Operand::Kind::kSymbol && name == list.name) labels = &targets;
  if (!labels) return c.ErrAt(list, "expected the name of a .branchtargets list");
  if (labels->empty() || labels->size() > 0xFFFF) return c.ErrAt(list, "bad .branchtargets list");
  Inst in;
  in.fn = ExecBrxIdx;
  in.n = static_cast<uint16_t>(labels->size());
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(0, Ty::kU32));
  c.Emit(in);
  for (const ast::Operand& label : *labels) {
    Inst entry;
    entry.fn = ExecTrap;  // never executed: ExecBrxIdx jumps over the table
    PVGPU_TRY(c.EmitBranch(entry, label));
  }
  return Status::Ok();
}

Status LowerRetOrExit(LowerCtx& c, ExecFn fn) {
  Inst in;
  in.fn = fn;
  c.Emit(in);
  return Status::Ok();
}
Status LowerRet(LowerCtx& c) { return LowerRetOrExit(c, c.in_kernel() ? ExecExit : ExecRet); }
Status LowerExit(LowerCtx& c) { return LowerRetOrExit(c, ExecExit); }
Status LowerTrap(LowerCtx& c) { return LowerRetOrExit(c, ExecTrap); }
Status LowerNoOp(LowerCtx& c) { return LowerRetOrExit(c, ExecNoOp); }
// A thread that sleeps in a loop waits for another: the loop is a spin loop.
Status LowerNanosleep(LowerCtx& c) {
  c.MarkPoll();
  return LowerNoOp(c);
}

// call[.uni] [(rets),] func[, (args)][, proto];
Status LowerCall(LowerCtx& c) {
  using K = ast::Operand::Kind;
  const auto& ops = c.ops();
  size_t i = 0;
  std::vector<ast::Operand> rets, args;
  if (i < ops.size() && ops[i].kind == K::kVector && ops[i].name == "(") rets = ops[i++].elems;
  if (i >= ops.size()) return c.Err("call without a target");
  const ast::Operand& target = ops[i++];
  if (i < ops.size() && ops[i].kind == K::kVector && ops[i].name == "(") args = ops[i++].elems;
  uint32_t probe_size;
  bool is_register = target.kind == K::kReg;
  if (!is_register && target.kind == K::kSymbol && !c.FuncIndex(target.name).ok())
    is_register = !c.FrameSymOffset(target, &probe_size).ok();  // a register named without '%'
  if (is_register) {
    Inst in;
    in.fn = ExecCallIndirect;
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.SrcOp(target, Ty::kU64));
    PVGPU_ASSIGN_OR_RETURN(uint32_t table, c.AddIndirectTargets(args, rets));
    in.aux = table;
    c.Emit(in);
    return Status::Ok();
  }
  if (target.kind != K::kSymbol) return c.Unsupported("call target");
  PVGPU_ASSIGN_OR_RETURN(int callee, c.FuncIndex(target.name));
  const ast::Function& f = c.module().functions[callee];
  if (!f.has_body) {
    Inst in;
    if (f.name == "vprintf") {
      in.fn = ExecBuiltinPrintf;
      c.img().uses_printf = true;
    } else if (f.name == "__assertfail") {
      in.fn = ExecBuiltinAssert;
    } else if (ExecFn device_runtime = DeviceRuntimeBuiltin(f.name)) {
      in.fn = device_runtime;
      c.img().uses_device_launch = true;
    } else if (f.name.starts_with("__cudaCDP") || f.name.starts_with("cudaLaunchDevice") ||
               f.name.starts_with("cudaGetParameterBuffer")) {
      // The device runtime's other calls (device-side events, the legacy CDP1 interface).
      return c.Err("the device runtime's " + f.name + " is not supported (dynamic parallelism "
                   "supports launches, streams and the last error: docs/dynamic-parallelism.md)");
    } else {
      return c.Err("call to unsupported external function " + f.name);
    }
    // Builtins read their arguments straight from the caller's frame: a[k] holds offsets.
    if (args.size() > 5 || rets.size() > 1) return c.Err("bad argument list for " + f.name);
    for (size_t k = 0; k < args.size(); ++k) {
      uint32_t size;
      PVGPU_ASSIGN_OR_RETURN(in.a[k], c.FrameSymOffset(args[k], &size));
    }
    if (!rets.empty()) {
      uint32_t size;
      PVGPU_ASSIGN_OR_RETURN(uint32_t off, c.FrameSymOffset(rets[0], &size));
      in.aux = off;
      in.flags = 1;
    }
    in.n = static_cast<uint16_t>(args.size());
    c.Emit(in);
    return Status::Ok();
  }
  PVGPU_ASSIGN_OR_RETURN(uint32_t site, c.AddCallSite(callee, args, rets));
  Inst in;
  in.fn = ExecCall;
  in.aux = site;
  c.Emit(in);
  return Status::Ok();
}

}  // namespace

bool ExecReadClock(const Inst& in, Warp& w, uint32_t m) {
  uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  uint64_t v = in.aux == 0 || in.aux == 1 ? ns : ns;  // 1 GHz nominal clock
  ForLanes(m, [&](int i) {
    if (in.aux == 1 || in.aux == 2)
      StoreReg<uint64_t>(w.regs, in.a[0], i, v);
    else if (in.aux == 4)
      StoreReg<uint32_t>(w.regs, in.a[0], i, static_cast<uint32_t>(v >> 32));
    else
      StoreReg<uint32_t>(w.regs, in.a[0], i, static_cast<uint32_t>(v));
  });
  return false;
}

void RegisterControl(OpTable& t) {
  t.Add("bra", LowerBra);
  t.Add("brx", LowerBrx);
  t.Add("call", LowerCall);
  t.Add("ret", LowerRet);
  t.Add("exit", LowerExit);
  t.Add("trap", LowerTrap);
  t.Add("brkpt", LowerNoOp);
  t.Add("pmevent", LowerNoOp);
  t.Add("nanosleep", LowerNanosleep);
  // Programmatic dependent launch (sm_90): a context's launches run one after another, so the
  // grids a kernel would wait for have completed and there is nothing to signal early.
  t.Add("griddepcontrol", LowerNoOp);
}

}  // namespace pvgpu::ptx
