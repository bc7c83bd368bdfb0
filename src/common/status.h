// Status and StatusOr: the API-tier error type used inside pvgpu.
//
// Codes are CUresult values (a plain int here so that layers that never see cuda.h, such as the
// PTX engine, can use the type). They become a CUresult only at the export boundary of the guest
// library. Messages carry context for logs and JIT error logs; they never cross the C ABI.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace pvgpu {

// The subset of CUresult values used inside pvgpu without including cuda.h. Values are those of
// cuda.h (checked by static_asserts in guest/cuda/api_errors.cc).
enum class Code : int {
  kOk = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kDeinitialized = 4,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kInvalidContext = 201,
  kContextAlreadyCurrent = 202,
  kMapFailed = 205,
  kNoBinaryForGpu = 209,
  kArrayIsMapped = 207,
  kUnsupportedLimit = 215,
  kContextAlreadyInUse = 216,
  kInvalidPtx = 218,
  kInvalidSource = 300,
  kFileNotFound = 301,
  kInvalidHandle = 400,
  kIllegalState = 401,
  kNotFound = 500,
  kNotReady = 600,
  kIllegalAddress = 700,
  kLaunchOutOfResources = 701,
  kLaunchTimeout = 702,
  kPeerAccessUnsupported = 704,
  kPrimaryContextActive = 708,
  kContextIsDestroyed = 709,
  kAssert = 710,
  kHostMemoryAlreadyRegistered = 712,
  kHostMemoryNotRegistered = 713,
  kHardwareStackError = 714,
  kIllegalInstruction = 715,
  kMisalignedAddress = 716,
  kInvalidAddressSpace = 717,
  kInvalidPc = 718,
  kLaunchFailed = 719,
  kCooperativeLaunchTooLarge = 720,
  kNotPermitted = 800,
  kNotSupported = 801,
  kSystemNotReady = 802,
  kDeviceUnavailable = 46,
  kUnknown = 999,
};

// A sticky error is one that poisons the context, as on hardware (CUDA's "sticky" errors: the
// ones cuda.h says leave the process in an inconsistent state). A launch refused before it ran
// (kLaunchOutOfResources, kCooperativeLaunchTooLarge) is not one: the next launch may run.
constexpr bool IsStickyError(Code code) {
  switch (code) {
    case Code::kIllegalAddress:
    case Code::kLaunchTimeout:
    case Code::kAssert:
    case Code::kHardwareStackError:
    case Code::kIllegalInstruction:
    case Code::kMisalignedAddress:
    case Code::kInvalidAddressSpace:
    case Code::kInvalidPc:
    case Code::kLaunchFailed:
      return true;
    default:
      return false;
  }
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("while loading module: ...") the way LLVM's Expected users do.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status Error(Code code, std::string message) { return Status(code, std::move(message)); }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }
  StatusOr(T value) : value_(std::move(value)) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

const char* CodeName(Code code);

}  // namespace pvgpu

#define PVGPU_CONCAT_INNER(a, b) a##b
#define PVGPU_CONCAT(a, b) PVGPU_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is an error.
#define PVGPU_TRY(expr)                          \
  do {                                           \
    ::pvgpu::Status pvgpu_try_status_ = (expr);  \
    if (!pvgpu_try_status_.ok()) return pvgpu_try_status_; \
  } while (0)

// ASSIGN_OR_RETURN(auto x, Foo()): binds the value or returns the error.
#define PVGPU_ASSIGN_OR_RETURN(lhs, expr) \
  PVGPU_ASSIGN_OR_RETURN_IMPL(PVGPU_CONCAT(pvgpu_statusor_, __LINE__), lhs, expr)
#define PVGPU_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
