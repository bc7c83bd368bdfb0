// Dim3: a grid or block shape, as CUDA's dim3. One definition for the PTX engine, the adapter
// interface and the tools, so that a launch's shape passes through every layer unconverted.
#pragma once

#include <cstdint>

namespace pvgpu {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t Count() const { return uint64_t{x} * y * z; }
};

}  // namespace pvgpu
