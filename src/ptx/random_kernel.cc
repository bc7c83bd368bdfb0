#include "ptx/random_kernel.h"

#include <sstream>

#include "ptx/test_util.h"

namespace pvgpu::ptx::testing {

std::string RandomKernel(const std::function<uint32_t()>& next, int ops) {
  std::ostringstream k;
  auto pick = [&](int n) { return static_cast<int>(next() % static_cast<unsigned>(n)); };
  auto r = [&] { return "%r" + std::to_string(8 + pick(8)); };
  auto f = [&] { return "%f" + std::to_string(pick(8)); };
  k << ".version 9.0\n.target sm_90\n.address_size 64\n"
    << ".visible .entry k(.param .u64 out, .param .u64 in)\n{\n"
    << "  .reg .pred %p<8>;\n  .reg .b32 %r<24>;\n  .reg .b64 %rd<16>;\n  .reg .f32 %f<8>;\n"
    << "  .reg .b16 %rs<4>;\n  .reg .f64 %fd<4>;\n"
    << "  .shared .align 16 .b32 sm[256];\n"
    << "  ld.param.u64 %rd0, [out];\n  ld.param.u64 %rd1, [in];\n"
    << "  mov.u32 %r0, %tid.x;\n  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n"
    << "  mad.lo.s32 %r3, %r1, %r2, %r0;\n"
    << "  mul.wide.u32 %rd2, %r3, 16;\n  add.s64 %rd3, %rd1, %rd2;\n"
    << "  ld.global.v4.u32 {%r8, %r9, %r10, %r11}, [%rd3];\n"
    << "  xor.b32 %r12, %r8, %r0;\n  add.u32 %r13, %r9, %r3;\n  mov.u32 %r14, %r10;\n"
    << "  shl.b32 %r15, %r11, 1;\n"
    << "  cvt.rn.f32.u32 %f0, %r8;\n  cvt.rn.f32.s32 %f1, %r9;\n  mov.b32 %f2, %r10;\n"
    << "  mov.b32 %f3, %r11;\n  mul.f32 %f4, %f0, 0f3DCCCCCD;\n  add.f32 %f5, %f1, %f4;\n"
    << "  sub.f32 %f6, %f4, %f1;\n  mov.f32 %f7, 0f3F800000;\n"
    << "  and.b32 %r4, %r0, 63;\n  shl.b32 %r4, %r4, 2;\n  mov.u32 %r5, sm;\n"
    << "  add.u32 %r5, %r5, %r4;\n";
  int labels = 0;
  for (int i = 0; i < ops; ++i) {
    std::string guard;
    if (pick(6) == 0) {
      k << "  and.b32 %r6, %r0, " << (1 + pick(31)) << ";\n  setp.ne.u32 %p3, %r6, 0;\n";
      guard = pick(2) ? "@%p3 " : "@!%p3 ";
    }
    static const char* kIntegral[] = {"rni", "rzi", "rmi", "rpi"};
    switch (pick(32)) {
      case 0: k << "  " << guard << "add.u32 " << r() << ", " << r() << ", " << r() << ";\n"; break;
      case 1: k << "  " << guard << "sub.s32 " << r() << ", " << r() << ", " << r() << ";\n"; break;
      case 2: k << "  " << guard << "mul.lo.u32 " << r() << ", " << r() << ", " << r() << ";\n"; break;
      case 3: k << "  " << guard << "mad.lo.s32 " << r() << ", " << r() << ", " << r() << ", " << r() << ";\n"; break;
      case 4: k << "  " << guard << (pick(2) ? "min.s32 " : "max.u32 ") << r() << ", " << r() << ", " << r() << ";\n"; break;
      case 5: k << "  " << guard << (pick(3) == 0 ? "and.b32 " : pick(2) ? "or.b32 " : "xor.b32 ") << r() << ", " << r() << ", " << r() << ";\n"; break;
      case 6: k << "  " << guard << (pick(2) ? "shl.b32 " : pick(2) ? "shr.u32 " : "shr.s32 ") << r() << ", " << r() << ", " << pick(40) << ";\n"; break;
      case 7: k << "  " << guard << (pick(2) ? "shr.s32 " : "shl.b32 ") << r() << ", " << r() << ", " << r() << ";\n"; break;
      case 8: k << "  " << guard << "add.f32 " << f() << ", " << f() << ", " << f() << ";\n"; break;
      case 9: k << "  " << guard << "mul.f32 " << f() << ", " << f() << ", " << f() << ";\n"; break;
      case 10: k << "  " << guard << "fma.rn.f32 " << f() << ", " << f() << ", " << f() << ", " << f() << ";\n"; break;
      case 11: k << "  " << guard << "div.rn.f32 " << f() << ", " << f() << ", " << f() << ";\n"; break;
      case 12: k << "  " << guard << (pick(2) ? "sqrt.rn.f32 " : pick(2) ? "rsqrt.approx.f32 " : "abs.f32 ") << f() << ", " << f() << ";\n"; break;
      case 13:  // not neg.s32 of a float register: a NaN's payload would reach an integer
        if (pick(2)) {
          k << "  " << guard << "neg.f32 " << f() << ", " << f() << ";\n";
        } else {
          k << "  " << guard << "neg.s32 " << r() << ", " << r() << ";\n";
        }
        break;
      case 14: {
        static const char* cmp[] = {"lt", "le", "gt", "ge", "eq", "ne", "ltu", "geu", "num", "nan"};
        k << "  setp." << cmp[pick(10)] << ".f32 %p1, " << f() << ", " << f() << ";\n"
          << "  selp.b32 " << r() << ", " << r() << ", " << r() << ", %p1;\n";
        break;
      }
      case 15: {
        static const char* cmp[] = {"lt", "le", "gt", "ge", "eq", "ne", "lo", "hs"};
        k << "  setp." << cmp[pick(8)] << (pick(2) ? ".s32 " : ".u32 ") << "%p2, " << r()
          << ", " << r() << ";\n"
          << "  selp.f32 " << f() << ", " << f() << ", " << f() << ", %p2;\n";
        break;
      }
      case 16: {  // a divergent if/else
        const int l = labels++;
        k << "  and.b32 %r7, " << r() << ", " << (1 + pick(7)) << ";\n"
          << "  setp.eq.u32 %p4, %r7, 0;\n  @%p4 bra $ELSE" << l << ";\n"
          << "  add.u32 " << r() << ", " << r() << ", " << pick(1000) << ";\n"
          << "  mul.f32 " << f() << ", " << f() << ", " << f() << ";\n"
          << "  bra $END" << l << ";\n$ELSE" << l << ":\n"
          << "  sub.u32 " << r() << ", " << r() << ", " << r() << ";\n$END" << l << ":\n";
        break;
      }
      case 17: {  // a loop with a lane-dependent trip count
        const int l = labels++;
        k << "  and.b32 %r6, %r0, 7;\n  mov.u32 %r7, 0;\n$LOOP" << l << ":\n"
          << "  add.u32 " << r() << ", " << r() << ", %r7;\n"
          << "  fma.rn.f32 " << f() << ", " << f() << ", 0f3F000000, " << f() << ";\n"
          << "  add.u32 %r7, %r7, 1;\n  setp.le.u32 %p5, %r7, %r6;\n"
          << "  @%p5 bra $LOOP" << l << ";\n";
        break;
      }
      case 18:  // shared memory: write, barrier, read a neighbour
        k << "  st.shared.u32 [%r5], " << r() << ";\n  bar.sync 0;\n"
          << "  xor.b32 %r6, %r4, " << (4 * (1 + pick(15))) << ";\n  and.b32 %r6, %r6, 255;\n"
          << "  mov.u32 %r7, sm;\n  add.u32 %r7, %r7, %r6;\n"
          << "  ld.shared.u32 " << r() << ", [%r7];\n  bar.sync 0;\n";
        break;
      case 19:  // a broadcast load: every lane the same word
        k << "  ld.global.u32 " << r() << ", [%rd1+" << 4 * pick(32) << "];\n";
        break;
      case 20:  // a gathered load
        k << "  and.b32 %r6, " << r() << ", 63;\n  mul.wide.u32 %rd4, %r6, 4;\n"
          << "  add.s64 %rd5, %rd1, %rd4;\n  " << guard << "ld.global.u32 " << r()
          << ", [%rd5];\n";
        break;
      case 21:
        k << "  cvt.rzi.s32.f32 " << r() << ", " << f() << ";\n";
        break;
      case 22:
        k << "  mul.wide.s32 %rd6, " << r() << ", " << r() << ";\n"
          << "  cvt.u32.u64 " << r() << ", %rd6;\n  shr.u64 %rd6, %rd6, 32;\n"
          << "  cvt.u32.u64 " << r() << ", %rd6;\n";
        break;
      case 23:  // float min/max: NaN operands, signed zeros
        k << "  " << guard << (pick(2) ? "min" : "max") << (pick(3) == 0 ? ".NaN" : "")
          << ".f32 " << f() << ", " << f() << ", " << f() << ";\n";
        break;
      case 24: {  // special values for min/max and the conversions
        static const char* kSpecial[] = {"0f80000000", "0f00000000", "0f7FC00000",
                                         "0fFF800000", "0f4F000000", "0fCF000001"};
        k << "  " << guard << "mov.f32 " << f() << ", " << kSpecial[pick(6)] << ";\n";
        break;
      }
      case 25:  // float to integer, every integral rounding, saturating
        k << "  " << guard << "cvt." << kIntegral[pick(4)] << (pick(2) ? ".s32" : ".u32")
          << ".f32 " << r() << ", " << f() << ";\n";
        break;
      case 26:  // through 16-bit registers
        k << "  cvt.u16.u32 %rs0, " << r() << ";\n  cvt.s32.s16 " << r() << ", %rs0;\n"
          << "  cvt." << kIntegral[pick(4)] << (pick(2) ? ".s16" : ".u16") << ".f32 %rs1, "
          << f() << ";\n  cvt.u32.u16 " << r() << ", %rs1;\n"
          << "  cvt.rn.f32." << (pick(2) ? "s16" : "u16") << " " << f() << ", %rs1;\n";
        break;
      case 27:  // through double
        k << "  cvt.f64.f32 %fd0, " << f() << ";\n  cvt." << kIntegral[pick(4)]
          << ".f64.f64 %fd1, %fd0;\n  cvt.rn.f32.f64 " << f() << ", %fd" << pick(2) << ";\n"
          << "  cvt.rn.f64." << (pick(2) ? "s32" : "u32") << " %fd2, " << r() << ";\n"
          << "  mul.f64 %fd2, %fd2, 0d3FF8000000000000;\n"
          << "  cvt." << kIntegral[pick(4)] << (pick(2) ? ".s32" : ".u32") << ".f64 " << r()
          << ", %fd2;\n";
        break;
      case 28:  // to an integral float value
        k << "  " << guard << "cvt." << kIntegral[pick(4)] << ".f32.f32 " << f() << ", " << f()
          << ";\n";
        break;
      case 29: {  // warp shuffles: every mode, segment widths, lanes past the segment
        static const char* kMode[] = {"up", "down", "bfly", "idx"};
        const int mode = pick(4), width = 1 << pick(6);
        const int c = ((32 - width) << 8) | (mode == 0 ? 0 : 31);
        const std::string lane = pick(3) == 0 ? r() : std::to_string(pick(40));
        // c from a register written just before (an unwritten register's value is undefined).
        const bool c_reg = pick(4) == 0;
        if (c_reg) k << "  and.b32 %r7, " << r() << ", 7967;\n";
        const std::string cop = c_reg ? "%r7" : std::to_string(c);
        // Never guarded: every lane the member mask names must execute a .sync collective.
        k << "  shfl.sync." << kMode[mode] << ".b32 " << r() << "|%p6, " << r()
          << ", " << lane << ", " << cop << ", -1;\n"
          << "  selp.b32 " << r() << ", " << r() << ", " << r() << ", %p6;\n";
        break;
      }
      case 30: {  // votes over a lane-dependent predicate
        static const char* kVote[] = {"all", "any", "uni"};
        k << "  setp.lt.u32 %p6, " << r() << ", " << r() << ";\n";
        if (pick(2)) {
          k << "  vote.sync.ballot.b32 " << r() << ", %p6, -1;\n";  // unguarded, as shfl
        } else {
          k << "  vote.sync." << kVote[pick(3)] << ".pred %p7, %p6, -1;\n"
            << "  selp.b32 " << r() << ", " << r() << ", " << r() << ", %p7;\n";
        }
        break;
      }
      case 31: {  // a 16-wide block's shapes: two rows stored, then a row, a broadcast per
                  // half-warp, or a column loaded; each warp in its own half of sm
        const int gap = 4 * (16 + pick(97));  // rows apart (no lane stores over another)
        k << "  shr.u32 %r6, %r0, 4;\n  and.b32 %r6, %r6, 1;\n  xor.b32 %r6, %r6, " << pick(2)
          << ";\n  mul.lo.u32 %r6, %r6, " << gap << ";\n  and.b32 %r7, %r0, 15;\n"
          << "  shl.b32 %r7, %r7, 2;\n  add.u32 %r7, %r7, %r6;\n  shr.u32 %r6, %r0, 5;\n"
          << "  and.b32 %r6, %r6, 1;\n  mad.lo.u32 %r7, %r6, 512, %r7;\n  mov.u32 %r6, sm;\n"
          << "  add.u32 %r7, %r7, %r6;\n  st.shared.u32 [%r7], " << r() << ";\n  bar.sync 0;\n";
        switch (pick(3)) {
          case 0:
            k << "  ld.shared.u32 " << r() << ", [%r7];\n";
            break;
          case 1:  // lanes 0-15 read one word, lanes 16-31 another (either below)
            k << "  shr.u32 %r6, %r0, 4;\n  and.b32 %r6, %r6, 1;\n  xor.b32 %r6, %r6, " << pick(2)
              << ";\n  mul.lo.u32 %r6, %r6, " << 4 * pick(64) << ";\n  mov.u32 %r7, sm;\n"
              << "  add.u32 %r7, %r7, %r6;\n  ld.shared.u32 " << r() << ", [%r7+"
              << 4 * pick(64) << "];\n";
            break;
          default:  // lanes 16-31 read the words of lanes 0-15
            k << "  and.b32 %r6, %r0, 15;\n  mul.lo.u32 %r6, %r6, " << 4 * pick(17)
              << ";\n  mov.u32 %r7, sm;\n  add.u32 %r7, %r7, %r6;\n  ld.shared.u32 " << r()
              << ", [%r7];\n";
            break;
        }
        k << "  bar.sync 0;\n";
        break;
      }
      default:
        k << "  " << guard << "mov.b32 " << f() << ", " << r() << ";\n";
        break;
    }
  }
  k << "  mul.wide.u32 %rd7, %r3, 64;\n  add.s64 %rd8, %rd0, %rd7;\n";
  for (int i = 0; i < 8; ++i) k << "  st.global.u32 [%rd8+" << 4 * i << "], %r" << 8 + i << ";\n";
  for (int i = 0; i < 8; ++i) k << "  st.global.f32 [%rd8+" << 32 + 4 * i << "], %f" << i << ";\n";
  k << "  ret;\n}\n";
  return k.str();
}

KernelRun RunKernel(Engine engine, const std::string& ptx, const std::vector<uint32_t>& in,
                    size_t out_words, Dim3 grid, Dim3 block) {
  KernelRun run;
  Runner runner(ptx);
  run.load = runner.load_status();
  if (!runner.ok()) {
    if (run.load.ok()) run.load = Error(Code::kInvalidPtx, "the loader refused the kernel");
    return run;
  }
  runner.set_engine(engine);
  const uint64_t din = runner.mem().Upload(in.empty() ? std::vector<uint32_t>{0} : in);
  const uint64_t dout = runner.mem().Upload(std::vector<uint32_t>(out_words, 0xA5A5A5A5u));
  run.launch = runner.Launch("k", grid, block, {dout, din});
  run.out = runner.mem().Download<uint32_t>(dout, out_words);
  return run;
}

}  // namespace pvgpu::ptx::testing
