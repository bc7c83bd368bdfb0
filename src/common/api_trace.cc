#include "common/api_trace.h"

#include "common/log.h"

namespace pvgpu::log {

CallTrace::CallTrace(const char* name) { out_ << name << '('; }

void CallTrace::Separate() {
  if (!first_) out_ << ", ";
  first_ = false;
}

CallTrace& CallTrace::Hex(uint64_t value) {
  Separate();
  out_ << "0x" << std::hex << value << std::dec;
  return *this;
}

CallTrace& CallTrace::Text(const char* text) {
  Separate();
  if (text == nullptr) {
    out_ << "(null)";
  } else {
    out_ << '"' << text << '"';
  }
  return *this;
}

void CallTrace::Result(const char* result_name) {
  out_ << ") -> " << result_name;
  Write(Level::kTrace, out_.str());
}

}  // namespace pvgpu::log
