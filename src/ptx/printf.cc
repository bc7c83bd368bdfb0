// Device-side vprintf and __assertfail. The format string and the packed argument buffer are
// read from guest memory through the same bounds-checked resolution as loads.
#include <cinttypes>
#include <cstdio>

#include "ptx/memory.h"
#include "ptx/program.h"

namespace pvgpu::ptx {
namespace {

void Emit(Warp& w, const std::string& text) {
  std::lock_guard<std::mutex> l(w.launch->print_mu);
  if (w.launch->env.print) {
    w.launch->env.print(text);
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
}

// Formats one lane's printf. Returns false when memory could not be read.
bool Format(Warp& w, int lane, const std::string& fmt, uint64_t args, std::string* out) {
  uint64_t off = 0;
  auto fetch = [&](uint32_t size, uint64_t* v) {
    off = (off + size - 1) & ~uint64_t{size - 1};
    uint8_t* p = args ? Resolve<MemSpace::kGeneric>(w, lane, args + off, size, false) : nullptr;
    if (!p) return false;
    *v = 0;
    std::memcpy(v, p, size);
    off += size;
    return true;
  };
  char buf[512];
  for (size_t i = 0; i < fmt.size(); ++i) {
    char ch = fmt[i];
    if (ch != '%') {
      out->push_back(ch);
      continue;
    }
    size_t start = i++;
    if (i < fmt.size() && fmt[i] == '%') {
      out->push_back('%');
      continue;
    }
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) ++i;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) ++i;
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) ++i;
    }
    std::string spec = fmt.substr(start, i - start);  // flags/width/precision
    int longs = 0;
    while (i < fmt.size() && std::string_view("hlLzjt").find(fmt[i]) != std::string_view::npos) {
      if (fmt[i] == 'l' || fmt[i] == 'z' || fmt[i] == 'j' || fmt[i] == 't' || fmt[i] == 'L')
        ++longs;
      ++i;
    }
    if (i >= fmt.size()) {
      *out += fmt.substr(start);
      break;
    }
    char conv = fmt[i];
    uint64_t v = 0;
    switch (conv) {
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'c': {
        bool wide = longs > 0;
        if (!fetch(wide ? 8 : 4, &v)) return false;
        std::string f = spec + (wide ? "ll" : "") + conv;
        if (conv == 'c') {
          std::snprintf(buf, sizeof(buf), (spec + "c").c_str(), static_cast<int>(v));
        } else if (conv == 'd' || conv == 'i') {
          long long sv =
              wide ? static_cast<long long>(v) : static_cast<long long>(static_cast<int32_t>(v));
          std::snprintf(buf, sizeof(buf), (spec + "ll" + conv).c_str(), sv);
        } else {
          unsigned long long uv = wide ? v : static_cast<uint32_t>(v);
          std::snprintf(buf, sizeof(buf), (spec + "ll" + conv).c_str(), uv);
        }
        *out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
      case 'a':
      case 'A': {
        if (!fetch(8, &v)) return false;
        double d;
        std::memcpy(&d, &v, 8);
        std::snprintf(buf, sizeof(buf), (spec + conv).c_str(), d);
        *out += buf;
        break;
      }
      case 'p': {
        if (!fetch(8, &v)) return false;
        std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
        *out += buf;
        break;
      }
      case 's': {
        if (!fetch(8, &v)) return false;
        std::string s;
        if (v == 0)
          s = "(null)";
        else if (!ReadCString(w, lane, v, &s))
          return false;
        std::snprintf(buf, sizeof(buf), (spec + "s").c_str(), s.c_str());
        *out += buf;
        break;
      }
      default:
        out->append(fmt, start, i - start + 1);
        break;
    }
  }
  return true;
}

}  // namespace

// a[0]: frame offset of the format pointer, a[1]: of the argument buffer pointer;
// flags bit0: aux is the frame offset of the 32-bit return value.
bool ExecBuiltinPrintf(const Inst& in, Warp& w, uint32_t m) {
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    uint64_t fmt_addr = ReadFrameArg<uint64_t>(w, i, in.a[0]);
    uint64_t args = in.n > 1 ? ReadFrameArg<uint64_t>(w, i, in.a[1]) : 0;
    std::string fmt, out;
    if (!ReadCString(w, i, fmt_addr, &fmt) || !Format(w, i, fmt, args, &out)) {
      AddressFault(w, in, i, fmt_addr, 1, MemSpace::kGeneric, false);
      return true;
    }
    Emit(w, out);
    WriteFrameResult<int32_t>(in, w, i, static_cast<int32_t>(out.size()));
  }
  return false;
}

// __assertfail(message, file, line, function, charSize)
bool ExecBuiltinAssert(const Inst& in, Warp& w, uint32_t m) {
  std::string first;
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    std::string msg, file, func;
    ReadCString(w, i, ReadFrameArg<uint64_t>(w, i, in.a[0]), &msg);
    ReadCString(w, i, ReadFrameArg<uint64_t>(w, i, in.a[1]), &file);
    uint32_t line = static_cast<uint32_t>(ReadFrameArg<uint64_t>(w, i, in.a[2]));
    ReadCString(w, i, ReadFrameArg<uint64_t>(w, i, in.a[3]), &func);
    const Dim3& b = w.launch->config.block;
    uint32_t tid = w.warp_id * 32 + static_cast<uint32_t>(i);
    char buf[128];
    std::snprintf(buf, sizeof(buf), "block: [%u,%u,%u], thread: [%u,%u,%u]", w.block->ctaid.x,
                  w.block->ctaid.y, w.block->ctaid.z, tid % b.x, (tid / b.x) % b.y,
                  tid / (b.x * b.y));
    std::string text = file + ":" + std::to_string(line) + ": " + func + ": " + buf +
                       " Assertion `" + msg + "` failed.\n";
    Emit(w, text);
    if (first.empty()) first = text.substr(0, text.size() - 1);
  }
  w.Fault(Code::kAssert, in, __builtin_ctz(m), "device-side assert: " + first);
  return true;
}

}  // namespace pvgpu::ptx
