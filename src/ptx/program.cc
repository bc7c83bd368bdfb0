// LoadProgram: parse, collect module metadata (globals with initial bytes, kernel parameter
// layouts) and lower every kernel to its image.
#include "ptx/program.h"

#include <bit>
#include <cstring>

#include "ptx/jit.h"
#include "ptx/lexer.h"
#include "ptx/lower.h"
#include "ptx/parser.h"
#include "ptx/types.h"

namespace pvgpu::ptx {

Status VarLayout(const ast::VarDecl& d, uint64_t* size, uint32_t* align);

const KernelInfo* Program::FindKernel(std::string_view name) const {
  for (const auto& k : kernels())
    if (k.name == name) return &k;
  return nullptr;
}

int Program::FindGlobal(std::string_view name) const {
  const auto& g = globals();
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {

constexpr uint64_t kMaxGlobalBytes = uint64_t{1} << 32;

Status BuildGlobals(const ast::Module& m, ProgramImpl& p) {
  for (const auto& d : m.globals) {
    if (d.space == ast::Space::kShared) {
      uint64_t size;
      uint32_t align;
      PVGPU_TRY(VarLayout(d, &size, &align));
      bool dynamic = d.has_dims && !d.dims.empty() && d.dims[0] == 0;
      p.shared_vars_[d.name] = {size, align, dynamic};
      continue;
    }
    GlobalInfo g;
    g.name = d.name;
    g.is_const = d.space == ast::Space::kConst;
    Ty t = ParseType(d.type);
    uint32_t es = std::max<uint32_t>(TypeSize(t), 1);
    uint64_t n = d.vector;
    bool unsized = false;
    for (uint64_t x : d.dims) {
      if (x == 0)
        unsized = true;
      else
        n *= x;
    }
    if (unsized) n = std::max<uint64_t>(d.init.size(), 1);  // a[] = {..}
    if (n * es > kMaxGlobalBytes)
      return PtxErrorAt(d.line, d.col, "global " + d.name + " too large");
    g.size = n * es;
    g.align = d.align ? d.align : es;
    if (d.has_init) {
      if (d.init.size() > n)
        return PtxErrorAt(d.line, d.col, "too many initializers for " + d.name);
      g.init.assign(g.size, 0);
      for (size_t i = 0; i < d.init.size(); ++i) {
        const auto& in = d.init[i];
        if (in.is_symbol) {
          if (es != 8)
            return PtxErrorAt(d.line, d.col, "address initializer needs a 64-bit element");
          GlobalInfo::Reloc r;
          r.offset = i * es;
          r.addend = in.addend;
          r.target = -1;
          for (size_t j = 0; j < m.globals.size(); ++j) {
            (void)j;
          }
          // Resolved after all globals are known (forward references are legal).
          g.relocs.push_back(r);
          g.relocs.back().target = -100 - static_cast<int>(i);
          continue;
        }
        uint64_t bits = in.bits;
        if (t == Ty::kF32) {
          if (in.decimal_float) bits = std::bit_cast<uint32_t>(static_cast<float>(in.fvalue));
        } else if (t == Ty::kF64) {
          if (in.decimal_float) bits = std::bit_cast<uint64_t>(in.fvalue);
        }
        std::memcpy(g.init.data() + i * es, &bits, es);
      }
    }
    p.global_index_[g.name] = static_cast<int>(p.globals_.size());
    p.globals_.push_back(std::move(g));
  }
  // Resolve address initializers now that every global has an index.
  size_t gi = 0;
  for (const auto& d : m.globals) {
    if (d.space == ast::Space::kShared) continue;
    GlobalInfo& g = p.globals_[gi++];
    for (auto& r : g.relocs) {
      size_t i = static_cast<size_t>(-100 - r.target);
      const std::string& sym = d.init[i].symbol;
      auto it = p.global_index_.find(sym);
      if (it != p.global_index_.end()) {
        r.target = it->second;
        continue;
      }
      // A function (virtual table entry): its address is a fixed value, no relocation.
      int fi = -1;
      for (size_t f = 0; f < m.functions.size(); ++f)
        if (m.functions[f].name == sym) fi = static_cast<int>(f);
      if (fi < 0)
        return PtxErrorAt(d.line, d.col, "address initializer names unknown symbol " + sym);
      uint64_t v =
          kFuncWindow + 16 * static_cast<uint64_t>(fi) + static_cast<uint64_t>(d.init[i].addend);
      std::memcpy(g.init.data() + r.offset, &v, 8);
      r.target = -1;
    }
    std::erase_if(g.relocs, [](const GlobalInfo::Reloc& r) { return r.target < 0; });
  }
  return Status::Ok();
}

Status BuildKernel(const ast::Module& m, int fi, ProgramImpl& p) {
  const ast::Function& f = m.functions[fi];
  KernelInfo k;
  k.name = f.name;
  uint32_t cur = 0;
  for (const auto& d : f.params) {
    uint64_t size;
    uint32_t align;
    PVGPU_TRY(VarLayout(d, &size, &align));
    cur = (cur + align - 1) & ~(align - 1);
    k.params.push_back(ParamInfo{cur, static_cast<uint32_t>(size), align});
    cur += static_cast<uint32_t>(size);
  }
  if (cur > 32764) return PtxErrorAt(f.line, f.col, "kernel parameters exceed 32764 bytes");
  k.param_bytes = cur;
  if (f.maxntid[0]) k.max_threads_per_block = f.maxntid[0] * f.maxntid[1] * f.maxntid[2];
  if (f.reqntid[0]) {
    k.reqntid = Dim3{f.reqntid[0], f.reqntid[1], f.reqntid[2]};
    k.max_threads_per_block = f.reqntid[0] * f.reqntid[1] * f.reqntid[2];
  }
  if (k.max_threads_per_block > kMaxThreadsPerBlock)
    return PtxErrorAt(f.line, f.col, "thread count directive exceeds 1024");
  KernelImage img;
  img.name = f.name;
  LowerCtx ctx(m, p, img);
  PVGPU_TRY(ctx.LowerKernel(fi));
  k.static_shared_bytes = img.static_shared;
  k.local_bytes = img.local_bytes;
  uint32_t regs = 0;
  for (const auto& st : f.body)
    if (st.kind == ast::Statement::Kind::kDecl && st.decl.space == ast::Space::kReg)
      regs += st.decl.is_range ? st.decl.range_count : 1;
  k.num_regs = std::min<uint32_t>(regs, 255);
  k.target_sm = static_cast<uint32_t>(std::max(TargetSm(m.target), 0));
  p.kernel_of_function_[fi] = static_cast<int>(p.kernels_.size());
  p.kernels_.push_back(std::move(k));
  img.jit = std::make_shared<JitSlot>();
  p.images_.push_back(std::move(img));
  return Status::Ok();
}

}  // namespace

int TargetSm(std::string_view target) {
  if (!target.starts_with("sm_")) return -1;
  int v = 0;
  size_t i = 3;
  for (; i < target.size() && target[i] >= '0' && target[i] <= '9' && v < 100000; ++i)
    v = v * 10 + (target[i] - '0');
  return i == 3 ? -1 : v;
}

StatusOr<std::shared_ptr<const Program>> LoadProgram(std::string_view ptx_text,
                                                     std::string* error_log, std::string* info_log,
                                                     int max_target_sm) {
  auto parsed = ParseModule(ptx_text);
  if (!parsed.ok()) {
    if (error_log) *error_log += parsed.status().message() + "\n";
    return parsed.status();
  }
  return BuildProgram(*parsed, error_log, info_log, max_target_sm);
}

StatusOr<std::shared_ptr<const Program>> BuildProgram(const ast::Module& m, std::string* error_log,
                                                      std::string* info_log, int max_target_sm) {
  auto fail = [&](const Status& s) -> Status {
    if (error_log) *error_log += s.message() + "\n";
    return s;
  };
  if (m.address_size != 64)
    return fail(Error(Code::kInvalidPtx, "only .address_size 64 is supported"));
  if (TargetSm(m.target) > max_target_sm) {
    return fail(Error(Code::kInvalidPtx, "the module's .target " + m.target + " is newer than sm_" +
                                             std::to_string(max_target_sm) +
                                             ", the newest architecture this device runs"));
  }
  auto prog = std::make_shared<ProgramImpl>();
  Status s = BuildGlobals(m, *prog);
  if (!s.ok()) return fail(s);
  for (size_t i = 0; i < m.functions.size(); ++i) {
    if (!m.functions[i].is_entry) continue;
    s = BuildKernel(m, static_cast<int>(i), *prog);
    if (!s.ok()) return fail(s);
  }
  for (size_t i = 0; i < m.functions.size(); ++i) {
    if (m.functions[i].is_entry || !m.functions[i].has_body) continue;
    KernelImage scratch;
    LowerCtx ctx(m, *prog, scratch);
    s = ctx.ValidateFunction(static_cast<int>(i));
    if (!s.ok()) return fail(s);
  }
  if (info_log) {
    *info_log += "pvgpu ptx: " + std::to_string(prog->kernels_.size()) + " kernel(s), " +
                 std::to_string(prog->globals_.size()) + " global(s), target " + m.target + "\n";
  }
  return std::shared_ptr<const Program>(std::move(prog));
}

}  // namespace pvgpu::ptx
