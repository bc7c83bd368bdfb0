#include "adapters/link_inputs.h"

#include "fatbin/fatbin.h"

namespace pvgpu::adapters {

namespace {

std::span<const uint8_t> Bytes(std::string_view data) {
  return {reinterpret_cast<const uint8_t*>(data.data()), data.size()};
}

StatusOr<std::string> PtxOfObject(std::span<const uint8_t> object, int max_sm) {
  PVGPU_ASSIGN_OR_RETURN(std::span<const uint8_t> fatbin, fatbin::FatbinOfObject(object));
  return fatbin::ExtractPtx(fatbin, max_sm);
}

}  // namespace

StatusOr<PtxLinkSources> PtxOfLinkInputs(std::span<const protocol::LinkInput> inputs, int max_sm) {
  PtxLinkSources out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const protocol::LinkInput& input = inputs[i];
    std::string name = "#" + std::to_string(i + 1);
    if (!input.name.empty()) name += " (" + std::string(input.name) + ")";
    auto fail = [&](const Status& status) {
      return Error(status.code(), "input " + name + ", " + protocol::LinkInputTypeName(input.type) +
                                      ": " + status.message());
    };
    StatusOr<std::string> text = Error(Code::kNotSupported, "");
    switch (input.type) {
      case protocol::LinkInputType::kPtx:
        text = std::string(input.data.substr(0, input.data.find('\0')));
        break;
      case protocol::LinkInputType::kFatbin:
        text = fatbin::ExtractPtx(Bytes(input.data), max_sm);
        break;
      case protocol::LinkInputType::kObject:
        text = PtxOfObject(Bytes(input.data), max_sm);
        break;
      case protocol::LinkInputType::kCubin:
        text = Error(Code::kNoBinaryForGpu,
                     "a cubin holds machine code for one NVIDIA GPU, not PTX (build with PTX, "
                     "e.g. nvcc -gencode arch=compute_75,code=compute_75)");
        break;
      case protocol::LinkInputType::kNvvm:
        text = Error(Code::kNotSupported,
                     "LTO-IR needs NVIDIA's link-time optimizer; PTX is linked here (compile "
                     "without -dlto / LTO)");
        break;
      case protocol::LinkInputType::kLibrary: {
        auto members = fatbin::ArchiveMembers(Bytes(input.data));
        if (!members.ok()) return fail(members.status());
        size_t with_ptx = 0;
        for (const auto& member : *members) {
          auto member_text = PtxOfObject(member.data, max_sm);
          if (!member_text.ok()) {
            if (member_text.status().code() == Code::kNoBinaryForGpu) continue;
            return fail(Error(member_text.status().code(),
                              member.name + ": " + member_text.status().message()));
          }
          out.texts.push_back(std::move(member_text).value());
          out.sources.push_back({name + "(" + member.name + ")", out.texts.back(), true});
          ++with_ptx;
        }
        if (with_ptx == 0) return fail(Error(Code::kNoBinaryForGpu, "no member carries PTX"));
        continue;
      }
    }
    if (!text.ok()) return fail(text.status());
    out.texts.push_back(std::move(text).value());
    out.sources.push_back({std::move(name), out.texts.back()});
  }
  return out;
}

KernelInfo DescribePtxKernel(const ptx::KernelInfo& kernel) {
  KernelInfo info;
  info.name = kernel.name;
  for (const auto& p : kernel.params) {
    info.param_offsets.push_back(p.offset);
    info.param_sizes.push_back(p.size);
  }
  info.param_bytes = kernel.param_bytes;
  info.shared_bytes = kernel.static_shared_bytes;
  info.local_bytes = kernel.local_bytes;
  info.num_regs = kernel.num_regs;
  info.max_threads_per_block = kernel.max_threads_per_block;
  info.ptx_version = kernel.target_sm;  // the PTX that runs: the engine has no other binary
  info.binary_version = kernel.target_sm;
  return info;
}

}  // namespace pvgpu::adapters
