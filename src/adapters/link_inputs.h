// The PTX of a link image's inputs (protocol/link_image.h), for the PTX engine's linker: PTX as
// is, the PTX of fatbinaries and of host objects' embedded device code (nvcc -dc), and each
// member of a static library that carries PTX, marked to be linked only if needed. Cubins and
// LTO-IR carry none.
#pragma once

#include <deque>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/link_image.h"
#include "ptx/ptx.h"

namespace pvgpu::adapters {

struct PtxLinkSources {
  std::deque<std::string> texts;         // owned here; `sources` view them
  std::vector<ptx::LinkSource> sources;  // named "#N (input name)" for messages
};

// `max_sm`: take the newest PTX for an architecture up to this one from fatbinaries. Errors
// name the input; kNoBinaryForGpu when an input has no usable PTX.
StatusOr<PtxLinkSources> PtxOfLinkInputs(std::span<const protocol::LinkInput> inputs, int max_sm);

}  // namespace pvgpu::adapters
