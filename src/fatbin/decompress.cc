// Entry payload decompression with the system's liblz4 and libzstd.
//
// The output buffer is sized from the entry header (already capped by Parse), and both
// decoders are the bounded kind: they fail rather than write past it. A payload that
// decompresses to any other size than the header says is rejected, since a mismatch means the
// header or the payload was tampered with.
#include <lz4.h>
#include <zstd.h>

#include <limits>

#include "fatbin/fatbin.h"

namespace pvgpu::fatbin {

StatusOr<std::string> Contents(const Entry& entry) {
  const auto* src = reinterpret_cast<const char*>(entry.payload.data());
  if (entry.compression == Compression::kNone) return std::string(src, entry.payload.size());
  if (entry.decompressed_size > kMaxDecompressedSize) {
    return Error(Code::kInvalidImage, "fatbin: entry too large to decompress");
  }
  std::string out(entry.decompressed_size, '\0');
  if (entry.compression == Compression::kLz4) {
    // LZ4's interface takes int sizes; the output is bounded by kMaxDecompressedSize.
    if (entry.payload.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
      return Error(Code::kInvalidImage, "fatbin: LZ4 payload too large");
    }
    const int n = LZ4_decompress_safe(src, out.data(), static_cast<int>(entry.payload.size()),
                                      static_cast<int>(out.size()));
    if (n < 0 || static_cast<size_t>(n) != out.size()) {
      return Error(Code::kInvalidImage, "fatbin: corrupt LZ4 payload");
    }
    return out;
  }
  const size_t n = ZSTD_decompress(out.data(), out.size(), src, entry.payload.size());
  if (ZSTD_isError(n)) {
    return Error(Code::kInvalidImage,
                 std::string("fatbin: corrupt zstd payload: ") + ZSTD_getErrorName(n));
  }
  if (n != out.size()) return Error(Code::kInvalidImage, "fatbin: zstd payload size mismatch");
  return out;
}

}  // namespace pvgpu::fatbin
