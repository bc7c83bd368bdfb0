// NVML initialization, error strings and system queries.
#include <cstring>
#include <string>

#include "common/api_trace.h"
#include "common/log.h"
#include "guest/client/client.h"
#include "guest/nvml/nvml_api.h"
#include "guest/nvml/nvml_api_autogen.h"
#include "guest/nvml/state.h"
#include "host/version.h"

namespace pvgpu::guest::nvml {

namespace {

// Reads PVGPU_LOG when the library is loaded, so that calls made before nvmlInit (which
// applications do make, e.g. nvmlErrorString) are traced too.
__attribute__((constructor)) void InitLogging() {
  pvgpu::log::Init("libnvidia-ml", pvgpu::log::Level::kWarn);
}

// pvgpu's own version number ("0.1.0"), reported where NVML reports the kernel driver's
// version ("580.65.06"): it is the version of the component that plays the driver's role.
std::string DriverVersionNumber(const std::string& host_version) {
  const size_t space = host_version.rfind(' ');
  return space == std::string::npos ? host_version : host_version.substr(space + 1);
}

const char* ErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "The requested vgpu operation is not available on target device, because ECC is "
             "enabled";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED:
      return "Deprecated";
    case NVML_ERROR_NOT_READY:
      return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU not found";
    case NVML_ERROR_INVALID_STATE:
      return "Invalid state";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
  }
  return "Unknown Error";
}

}  // namespace

namespace api {

nvmlReturn_t Init_v2() { return State::Get().Init(0); }

nvmlReturn_t InitWithFlags(unsigned int flags) { return State::Get().Init(flags); }

nvmlReturn_t Shutdown() { return State::Get().Shutdown(); }

nvmlReturn_t SystemGetDriverVersion(char* version, unsigned int length) {
  return CopyString(DriverVersionNumber(State::Get().host_version()), version, length);
}

// "13.0.1.0": the CUDA major version, then the driver's version, as NVML composes it. Works
// without nvmlInit, as NVML's does: it describes this library, not a host.
nvmlReturn_t SystemGetNVMLVersion(char* version, unsigned int length) {
  return CopyString(std::to_string(host::kCudaDriverVersion / 1000) + "." +
                        DriverVersionNumber(host::kVersionString),
                    version, length);
}

// Works without nvmlInit, as NVML's (which asks libcuda) does. Before nvmlInit the first host
// in PVGPU_HOST that answers is asked; with none reachable it is LIBRARY_NOT_FOUND, NVML's
// answer when it cannot load libcuda.
nvmlReturn_t SystemGetCudaDriverVersion(int* cudaDriverVersion) {
  State& state = State::Get();
  if (state.CheckInit() == NVML_SUCCESS && state.driver_version() != 0) {
    *cudaDriverVersion = state.driver_version();
    return NVML_SUCCESS;
  }
  for (Client* client : Client::FromEnvironment()) {
    if (client->Connect().ok()) {
      *cudaDriverVersion = static_cast<int>(client->hello().driver_version);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_LIBRARY_NOT_FOUND;
}

}  // namespace api
}  // namespace pvgpu::guest::nvml

// Written by hand (exports.txt says `hand`): it returns a string, not an nvmlReturn_t.
extern "C" const char* nvmlErrorString(nvmlReturn_t result) {
  const char* text = pvgpu::guest::nvml::ErrorString(result);
  if (pvgpu::log::Enabled(pvgpu::log::Level::kTrace)) {
    pvgpu::log::CallTrace("nvmlErrorString")
        .Value(result)
        .Result(("\"" + std::string(text) + "\"").c_str());
  }
  return text;
}
