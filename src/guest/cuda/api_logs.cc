// Driver API: error log management (cuLogs*, CUDA 12.9) over the process's DriverLogs
// (driver_logs.h): libcuda's own warnings and errors (a module refused and why, a call not
// supported, a lost host), whatever PVGPU_LOG prints. PyTorch, for one, registers a callback
// at start-up. Every call works before cuInit.
#include <cstdio>
#include <cstring>
#include <string>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/driver_logs.h"

namespace pvgpu::guest {
namespace {

// The capture starts when the library is loaded, so that the first warnings are kept too.
__attribute__((constructor)) void StartDriverLogs() { DriverLogs::Process(); }

}  // namespace

namespace api {

Code LogsRegisterCallback(CUlogsCallback callbackFunc, void* userData,
                          CUlogsCallbackHandle* callback_out) {
  if (callbackFunc == nullptr) return Code::kInvalidValue;
  CUlogsCallbackHandle handle = DriverLogs::Process().Register(callbackFunc, userData);
  if (callback_out != nullptr) *callback_out = handle;
  return Code::kOk;
}

Code LogsUnregisterCallback(CUlogsCallbackHandle callback) {
  return DriverLogs::Process().Unregister(callback) ? Code::kOk : Code::kInvalidValue;
}

Code LogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  *iterator_out = DriverLogs::Process().Current();
  return Code::kOk;
}

Code LogsDumpToFile(CUlogIterator* iterator, const char* pathToFile, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  FILE* out = std::fopen(pathToFile, "w");
  if (out == nullptr) return Code::kInvalidValue;
  const std::string text = DriverLogs::Process().DumpForFile(iterator);
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  return std::fclose(out) == 0 && ok ? Code::kOk : Code::kInvalidValue;
}

Code LogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  const size_t room = *size;  // bytes, the terminating NUL included
  std::string text;
  const bool fits = DriverLogs::Process().DumpForMemory(iterator, room, &text);
  *size = 0;
  if (!fits) return Code::kInvalidValue;
  if (room == 0) return Code::kOk;  // nothing to dump (a message would not have fit)
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  *size = text.size();
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
