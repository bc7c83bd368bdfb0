// CallTrace: the line `PVGPU_LOG=trace` writes for one call of the guest libraries' C API,
// `name(argument, ...) -> RESULT_NAME`, built argument by argument by the generated export
// shells (src/guest/*/gen_exports.py), each argument formatted by its kind.
//
// Build one only when log::Enabled(log::Level::kTrace): the formatting is not free.
#pragma once

#include <cstdint>
#include <sstream>
#include <type_traits>

#include "common/log.h"

namespace pvgpu::log {

class CallTrace {
 public:
  explicit CallTrace(const char* name);

  // Device addresses and flags: 0x-prefixed hexadecimal.
  CallTrace& Hex(uint64_t value);
  // A NUL-terminated string the caller passes in, quoted; null as (null).
  CallTrace& Text(const char* text);
  // Anything else: numbers (characters and enums as numbers), pointers as addresses.
  template <typename T>
  CallTrace& Value(const T& value) {
    Separate();
    if constexpr (std::is_pointer_v<T> || std::is_member_pointer_v<T> ||
                  std::is_null_pointer_v<T>) {
      out_ << reinterpret_cast<const void*>(value);
    } else if constexpr (std::is_enum_v<T>) {
      out_ << static_cast<long long>(value);
    } else if constexpr (std::is_integral_v<T>) {
      out_ << +value;  // promotes char types, which would print as characters
    } else {
      out_ << value;
    }
    return *this;
  }
  // Ends the line with the call's result and writes it at trace level.
  void Result(const char* result_name);

 private:
  void Separate();

  std::ostringstream out_;
  bool first_ = true;
};

}  // namespace pvgpu::log
