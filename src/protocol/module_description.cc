#include "protocol/module_description.h"

#include "protocol/wire.h"

namespace pvgpu::protocol {
namespace {
constexpr uint32_t kMaxEntries = 1u << 16;
constexpr uint32_t kMaxParams = 4096;
}  // namespace

std::vector<uint8_t> ModuleDescription::Encode() const {
  ByteWriter w;
  w.Put(static_cast<uint32_t>(kernels.size()));
  for (const auto& k : kernels) {
    w.PutString(k.name);
    w.Put(static_cast<uint32_t>(k.param_sizes.size()));
    for (size_t i = 0; i < k.param_sizes.size(); ++i) {
      w.Put(k.param_offsets[i]);
      w.Put(k.param_sizes[i]);
    }
    w.Put(k.param_bytes);
    w.Put(k.shared_bytes);
    w.Put(k.local_bytes);
    w.Put(k.num_regs);
    w.Put(k.max_threads_per_block);
    w.Put(k.ptx_version);
    w.Put(k.binary_version);
  }
  w.Put(static_cast<uint32_t>(globals.size()));
  for (const auto& g : globals) {
    w.PutString(g.name);
    w.Put(g.dptr);
    w.Put(g.size);
  }
  w.PutString(error_log);
  w.PutString(info_log);
  return std::move(w.bytes());
}

bool ModuleDescription::Decode(std::span<const uint8_t> bytes) {
  ByteReader r(bytes);
  uint32_t count = 0;
  if (!r.Get(&count) || count > kMaxEntries) return false;
  kernels.assign(count, {});
  for (auto& k : kernels) {
    uint32_t params = 0;
    if (!r.GetString(&k.name) || !r.Get(&params) || params > kMaxParams) return false;
    k.param_offsets.resize(params);
    k.param_sizes.resize(params);
    for (uint32_t i = 0; i < params; ++i) {
      if (!r.Get(&k.param_offsets[i]) || !r.Get(&k.param_sizes[i])) return false;
    }
    if (!r.Get(&k.param_bytes) || !r.Get(&k.shared_bytes) || !r.Get(&k.local_bytes) ||
        !r.Get(&k.num_regs) || !r.Get(&k.max_threads_per_block) || !r.Get(&k.ptx_version) ||
        !r.Get(&k.binary_version)) {
      return false;
    }
  }
  if (!r.Get(&count) || count > kMaxEntries) return false;
  globals.assign(count, {});
  for (auto& g : globals) {
    if (!r.GetString(&g.name) || !r.Get(&g.dptr) || !r.Get(&g.size)) return false;
  }
  return r.GetString(&error_log) && r.GetString(&info_log) && r.done();
}

}  // namespace pvgpu::protocol
