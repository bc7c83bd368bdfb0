// Support for the generated weak stubs (cuda_stubs_autogen.cc): every driver API function that
// pvgpu does not implement still exists, so that programs and loaders that bind symbols
// eagerly (dlsym of the whole API, cuGetProcAddress tables) start, and fail only on use.
//
// This header must not include cuda.h: the stubs' translation unit defines names that cuda.h
// maps to other names with macros.
#pragma once

#include <atomic>

namespace pvgpu::guest {

// One per stub; set when its name has been logged.
using OnceFlag = std::atomic<bool>;

// Logs "NAME is not supported by pvgpu" the first time a stub is called and returns
// CUDA_ERROR_NOT_SUPPORTED (as an int: the stubs are declared without cuda.h).
int NotSupported(const char* name, OnceFlag* once);

}  // namespace pvgpu::guest
