#include "common/status.h"

namespace pvgpu {

const char* CodeName(Code code) {
  switch (code) {
#define PVGPU_CODE_NAME(name) \
  case Code::name:            \
    return #name + 1;
    PVGPU_CODE_NAME(kOk)
    PVGPU_CODE_NAME(kInvalidValue)
    PVGPU_CODE_NAME(kOutOfMemory)
    PVGPU_CODE_NAME(kNotInitialized)
    PVGPU_CODE_NAME(kDeinitialized)
    PVGPU_CODE_NAME(kNoDevice)
    PVGPU_CODE_NAME(kInvalidDevice)
    PVGPU_CODE_NAME(kInvalidImage)
    PVGPU_CODE_NAME(kInvalidContext)
    PVGPU_CODE_NAME(kContextAlreadyCurrent)
    PVGPU_CODE_NAME(kMapFailed)
    PVGPU_CODE_NAME(kNoBinaryForGpu)
    PVGPU_CODE_NAME(kArrayIsMapped)
    PVGPU_CODE_NAME(kUnsupportedLimit)
    PVGPU_CODE_NAME(kContextAlreadyInUse)
    PVGPU_CODE_NAME(kInvalidPtx)
    PVGPU_CODE_NAME(kInvalidSource)
    PVGPU_CODE_NAME(kFileNotFound)
    PVGPU_CODE_NAME(kInvalidHandle)
    PVGPU_CODE_NAME(kIllegalState)
    PVGPU_CODE_NAME(kNotFound)
    PVGPU_CODE_NAME(kNotReady)
    PVGPU_CODE_NAME(kIllegalAddress)
    PVGPU_CODE_NAME(kLaunchOutOfResources)
    PVGPU_CODE_NAME(kLaunchTimeout)
    PVGPU_CODE_NAME(kPeerAccessUnsupported)
    PVGPU_CODE_NAME(kPrimaryContextActive)
    PVGPU_CODE_NAME(kContextIsDestroyed)
    PVGPU_CODE_NAME(kAssert)
    PVGPU_CODE_NAME(kHostMemoryAlreadyRegistered)
    PVGPU_CODE_NAME(kHostMemoryNotRegistered)
    PVGPU_CODE_NAME(kHardwareStackError)
    PVGPU_CODE_NAME(kIllegalInstruction)
    PVGPU_CODE_NAME(kMisalignedAddress)
    PVGPU_CODE_NAME(kInvalidAddressSpace)
    PVGPU_CODE_NAME(kInvalidPc)
    PVGPU_CODE_NAME(kLaunchFailed)
    PVGPU_CODE_NAME(kCooperativeLaunchTooLarge)
    PVGPU_CODE_NAME(kNotPermitted)
    PVGPU_CODE_NAME(kNotSupported)
    PVGPU_CODE_NAME(kSystemNotReady)
    PVGPU_CODE_NAME(kDeviceUnavailable)
    PVGPU_CODE_NAME(kUnknown)
#undef PVGPU_CODE_NAME
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out = CodeName(code_);
  if (!message_.empty()) out += ": " + message_;
  return out;
}

}  // namespace pvgpu
