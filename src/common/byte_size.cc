#include "common/byte_size.h"

#include <cctype>

namespace pvgpu {

bool ParseByteSize(const std::string& text, uint64_t* bytes) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  size_t end = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (...) {
    return false;
  }
  std::string suffix = text.substr(end);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix == "i") return false;
  if (!suffix.empty() && suffix.back() == 'i') suffix.pop_back();
  int shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (suffix == "T" || suffix == "t") shift = 40;
  else return false;
  if (shift != 0 && value > (~0ull >> shift)) return false;
  *bytes = value << shift;
  return true;
}

}  // namespace pvgpu
