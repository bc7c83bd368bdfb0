// Random well-formed PTX kernels for differential testing of the two engines (jit_test.cc's
// fixed set, and ptx_diff_fuzzer.cc, whose input bytes are the choices).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/dim3.h"
#include "common/status.h"
#include "ptx/ptx.h"

namespace pvgpu::ptx::testing {

// Writes a random kernel k(out, in) for blocks of 64 threads: each thread loads 4 words of
// `in` (at 16 * global thread index), runs `ops` random operations over 8 integer and 8 float
// registers (some under lane-dependent predicates, some in divergent if/else regions and
// bounded loops, some through shared memory with barriers, shuffles and votes, conversions),
// and stores its registers to `out` (16 words per thread: 8 integer, then 8 float). Every
// form is well defined for every input (no division by zero, no out-of-range access, loops of
// at most 8 trips, no register read before it is written, no float register's bits moved to an
// integer register), so any difference between the engines is a defect, except the payload of
// a float NaN (PTX defines none). `next` makes every choice (a value modulo the choice's range).
std::string RandomKernel(const std::function<uint32_t()>& next, int ops);

// One launch of kernel k(out, in) of `ptx` with `engine` on fresh memory: `in` uploaded,
// `out_words` words of output starting as 0xA5A5A5A5. `load` is the loader's verdict (nothing
// ran unless it is ok), `launch` the launch's.
struct KernelRun {
  Status load;
  Status launch;
  std::vector<uint32_t> out;
};
KernelRun RunKernel(Engine engine, const std::string& ptx, const std::vector<uint32_t>& in,
                    size_t out_words, Dim3 grid, Dim3 block);

}  // namespace pvgpu::ptx::testing
