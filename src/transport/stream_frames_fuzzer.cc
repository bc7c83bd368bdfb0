// libFuzzer target for the remote channel's frame decoder (stream_frames.h), which takes the
// bytes a peer sends over the network. Seeds in tests/fuzz/stream_frames; docs/fuzzing.md.
//
// Input: one byte that seeds how the rest is cut into pieces, then the stream. The stream is
// decoded twice, whole and in pieces (some read straight into message bodies, as the endpoint
// does), and both must agree: same messages, fences, goodbye, and the same verdict.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/stream_frames.h"

namespace {

using pvgpu::transport::internal::FrameDecoder;

// Small enough to reach the limit; large enough for direct reads to happen.
constexpr size_t kMaxMessage = 64u << 10;

struct Result {
  FrameDecoder::Output out;
  bool failed = false;
};

Result Whole(const uint8_t* data, size_t size) {
  Result r;
  FrameDecoder decoder(kMaxMessage);
  r.failed = !decoder.Feed({data, size}, &r.out).ok();
  return r;
}

Result Pieces(const uint8_t* data, size_t size, uint32_t seed) {
  Result r;
  FrameDecoder decoder(kMaxMessage);
  size_t at = 0;
  while (at < size && !r.failed) {
    seed = seed * 1103515245u + 12345u;
    const size_t left = size - at;
    const auto direct = decoder.DirectTarget(16);
    if (!direct.empty() && (seed >> 16) % 2 == 0) {
      const size_t n = std::min<size_t>({direct.size(), left, 1 + (seed >> 8) % 4096});
      std::memcpy(direct.data(), data + at, n);
      r.failed = !decoder.Filled(n, &r.out).ok();
      at += n;
      continue;
    }
    const size_t n = std::min<size_t>(left, 1 + (seed >> 8) % 97);
    r.failed = !decoder.Feed({data + at, n}, &r.out).ok();
    at += n;
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t seed = data[0];
  const Result whole = Whole(data + 1, size - 1);
  const Result pieces = Pieces(data + 1, size - 1, seed);
  // A failure ends decoding where it happens, so what came before must agree too.
  if (whole.failed != pieces.failed || whole.out.messages != pieces.out.messages ||
      whole.out.fence != pieces.out.fence || whole.out.fences_wanted != pieces.out.fences_wanted ||
      whole.out.goodbye != pieces.out.goodbye) {
    std::abort();
  }
  size_t total = 0;
  for (const auto& message : whole.out.messages) {
    if (message.size() > kMaxMessage) std::abort();
    total += message.size();
  }
  if (total != whole.out.message_bytes) std::abort();
  return 0;
}
