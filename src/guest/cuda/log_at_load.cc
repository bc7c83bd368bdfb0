// Reads PVGPU_LOG when the library is loaded rather than in cuInit: the CUDA runtime resolves
// every driver function through cuGetProcAddress, and asks for its first export table, before
// it calls cuInit, and those calls are what PVGPU_LOG=trace must show for a new client.
#include "common/log.h"

namespace {

__attribute__((constructor)) void InitLoggingAtLoad() {
  pvgpu::log::Init("libcuda", pvgpu::log::Level::kWarn);
}

}  // namespace
