// Runs hand-written PTX snippets: the body executes in kernel `k(out, in)` with common
// registers declared (%p0-7, %h0-7 16-bit, %r0-31, %rd0-31, %f0-15, %fd0-7); %rd0 = out,
// %rd1 = in, %r0 = %tid.x on entry.
#pragma once

#include <gtest/gtest.h>

#include "ptx/test_util.h"

namespace pvgpu::ptx::testing {

inline std::string SnippetKernel(const std::string& body, const std::string& prelude = "") {
  return ".version 9.0\n.target sm_90\n.address_size 64\n" + prelude +
         "\n.visible .entry k(.param .u64 out, .param .u64 in)\n{\n"
         "  .reg .pred %p<8>;\n  .reg .b16 %h<8>;\n  .reg .b32 %r<32>;\n  .reg .b64 %rd<32>;\n"
         "  .reg .f32 %f<16>;\n  .reg .f64 %fd<8>;\n"
         "  ld.param.u64 %rd0, [out];\n  ld.param.u64 %rd1, [in];\n  mov.u32 %r0, %tid.x;\n" +
         body + "\n  ret;\n}\n";
}

struct SnippetResult {
  Status status;
  std::vector<uint32_t> out;
  std::string printed;
};

// Launches `threads` threads in one block; `in` is uploaded, `out_words` words returned.
inline SnippetResult RunSnippet(const std::string& body, std::vector<uint32_t> in, size_t out_words,
                                uint32_t threads = 1, const std::string& prelude = "",
                                uint32_t dynamic_shared = 0) {
  SnippetResult r;
  Runner runner(SnippetKernel(body, prelude));
  if (!runner.ok()) {
    r.status = runner.load_status();
    return r;
  }
  if (in.empty()) in.push_back(0);
  uint64_t din = runner.mem().Upload(in);
  uint64_t dout = runner.mem().Upload(std::vector<uint32_t>(out_words, 0xDEADBEEF));
  r.status = runner.Launch("k", {1, 1, 1}, {threads, 1, 1}, {dout, din}, dynamic_shared);
  r.out = runner.mem().Download<uint32_t>(dout, out_words);
  r.printed = runner.printed();
  return r;
}

inline uint32_t F2U(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float U2F(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace pvgpu::ptx::testing
