// The loaded module: public metadata plus one lowered image per kernel.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ptx/ast.h"
#include "ptx/ir.h"
#include "ptx/ptx.h"

namespace pvgpu::ptx {

class ProgramImpl final : public Program {
 public:
  const std::vector<KernelInfo>& kernels() const override { return kernels_; }
  const std::vector<GlobalInfo>& globals() const override { return globals_; }
  const KernelImage* ImageFor(const KernelInfo& k) const {
    size_t i = static_cast<size_t>(&k - kernels_.data());
    return i < images_.size() ? &images_[i] : nullptr;
  }

  std::vector<KernelInfo> kernels_;
  std::vector<GlobalInfo> globals_;
  std::vector<KernelImage> images_;
  // The kernel index of each .entry by its function index (device-side launches name kernels by
  // function address).
  std::unordered_map<int, int> kernel_of_function_;
  std::unordered_map<std::string, int> global_index_;
  // Module-scope .shared variables: name -> (size, align, is extern dynamic array).
  struct SharedVar {
    uint64_t size;
    uint32_t align;
    bool dynamic;
  };
  std::unordered_map<std::string, SharedVar> shared_vars_;
};

// Whether the engine itself provides the external function `name` (device printf, assert).
bool IsBuiltinExternal(std::string_view name);

// The architecture number of a .target ("sm_80" -> 80, "sm_90a" -> 90), or -1 for another form.
int TargetSm(std::string_view target);

// Builds a program from a parsed (or linked) module; the second half of LoadProgram.
StatusOr<std::shared_ptr<const Program>> BuildProgram(const ast::Module& module,
                                                      std::string* error_log, std::string* info_log,
                                                      int max_target_sm);

}  // namespace pvgpu::ptx
