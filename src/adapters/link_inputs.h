// What both adapters take from the PTX engine: the PTX of a link's inputs, and a kernel's
// description from its PTX.
#pragma once

#include <deque>
#include <span>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "common/status.h"
#include "protocol/link_image.h"
#include "ptx/ptx.h"

namespace pvgpu::adapters {

// The PTX of a link image's inputs (protocol/link_image.h), for the PTX engine's linker: PTX as
// is, the PTX of fatbinaries and of host objects' embedded device code (nvcc -dc), and each
// member of a static library that carries PTX, marked to be linked only if needed. Cubins and
// LTO-IR carry none.

struct PtxLinkSources {
  std::deque<std::string> texts;         // owned here; `sources` view them
  std::vector<ptx::LinkSource> sources;  // named "#N (input name)" for messages
};

// `max_sm`: take the newest PTX for an architecture up to this one from fatbinaries. Errors
// name the input; kNoBinaryForGpu when an input has no usable PTX.
StatusOr<PtxLinkSources> PtxOfLinkInputs(std::span<const protocol::LinkInput> inputs, int max_sm);

// A kernel as its PTX declares it: name, parameter layout and the resources the PTX states
// (an adapter whose driver knows better overrides the resources).
KernelInfo DescribePtxKernel(const ptx::KernelInfo& kernel);

}  // namespace pvgpu::adapters
