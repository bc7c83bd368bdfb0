// CUDA arrays, texture and surface objects as a cudart program uses them (the CUDA samples'
// simpleTexture and simpleSurfaceWrite): an image copied into a cudaArray with
// cudaMemcpy2DToArray, read by a kernel through a texture object (point sampling with clamped
// unnormalized coordinates, then bilinear filtering with normalized coordinates), written
// through a surface object and copied back with cudaMemcpy2DFromArray; cudaArrayGetInfo and
// the resource descriptor of the texture. Results are checked against CPU references (for
// filtering, the programming guide's formula with its 9-bit fixed-point weights).
#include <cmath>
#include <vector>

#include "runtime_check.h"

constexpr int kWidth = 37, kHeight = 23;

__global__ void Fetch(cudaTextureObject_t tex, float* out, float dx, float dy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < kWidth && y < kHeight) out[y * kWidth + x] = tex2D<float>(tex, x + dx, y + dy);
}

__global__ void Sample(cudaTextureObject_t tex, float* out, float u, float v) {
  out[threadIdx.x] = tex2D<float>(tex, u + threadIdx.x * 0.013f, v);
}

__global__ void Invert(cudaSurfaceObject_t in, cudaSurfaceObject_t out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < kWidth && y < kHeight) {
    float v;
    surf2Dread(&v, in, x * static_cast<int>(sizeof(float)), y);
    surf2Dwrite(1.0f - v, out, x * static_cast<int>(sizeof(float)), y);
  }
}

static float Texel(const std::vector<float>& img, int x, int y) {
  x = x < 0 ? 0 : x >= kWidth ? kWidth - 1 : x;
  y = y < 0 ? 0 : y >= kHeight ? kHeight - 1 : y;
  return img[y * kWidth + x];
}

// Linear filtering as the programming guide's texture-fetching appendix defines it: weights in
// 9-bit fixed point (8 fractional bits), clamp addressing.
static float Bilinear(const std::vector<float>& img, float x, float y) {
  const float xb = x - 0.5f, yb = y - 0.5f;
  const float fx = std::floor(xb), fy = std::floor(yb);
  const float a = std::round((xb - fx) * 256.0f) / 256.0f;
  const float b = std::round((yb - fy) * 256.0f) / 256.0f;
  const int i = static_cast<int>(fx), j = static_cast<int>(fy);
  return (1 - a) * (1 - b) * Texel(img, i, j) + a * (1 - b) * Texel(img, i + 1, j) +
         (1 - a) * b * Texel(img, i, j + 1) + a * b * Texel(img, i + 1, j + 1);
}

int main() {
  std::vector<float> img(kWidth * kHeight);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) img[y * kWidth + x] = static_cast<float>((x * 7 + y * 3) % 17) / 16.0f;
  }
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array, inverted;
  CHECK(cudaMallocArray(&array, &desc, kWidth, kHeight, cudaArraySurfaceLoadStore));
  CHECK(cudaMallocArray(&inverted, &desc, kWidth, kHeight, cudaArraySurfaceLoadStore));
  CHECK(cudaMemcpy2DToArray(array, 0, 0, img.data(), kWidth * sizeof(float),
                            kWidth * sizeof(float), kHeight, cudaMemcpyHostToDevice));
  cudaChannelFormatDesc got_desc;
  cudaExtent extent;
  unsigned int flags = 0;
  CHECK(cudaArrayGetInfo(&got_desc, &extent, &flags, array));
  if (got_desc.x != 32 || got_desc.f != cudaChannelFormatKindFloat || extent.width != kWidth ||
      extent.height != kHeight || (flags & cudaArraySurfaceLoadStore) == 0) {
    return std::fprintf(stderr, "cudaArrayGetInfo: %d bits, %zux%zu, flags %u\n", got_desc.x,
                        extent.width, extent.height, flags), 1;
  }

  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaTextureDesc point{};
  point.addressMode[0] = point.addressMode[1] = cudaAddressModeClamp;
  point.filterMode = cudaFilterModePoint;
  point.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex_point;
  CHECK(cudaCreateTextureObject(&tex_point, &res, &point, nullptr));
  cudaResourceDesc back{};
  CHECK(cudaGetTextureObjectResourceDesc(&back, tex_point));
  if (back.resType != cudaResourceTypeArray || back.res.array.array != array) {
    return std::fprintf(stderr, "texture resource descriptor differs\n"), 1;
  }

  float* out;
  CHECK(cudaMalloc(&out, kWidth * kHeight * sizeof(float)));
  const dim3 block(8, 8), grid((kWidth + 7) / 8, (kHeight + 7) / 8);
  std::vector<float> host(kWidth * kHeight);
  // Point sampling at texel centres, and shifted by -2.5 texels (clamped at the edges).
  for (float shift : {0.5f, -2.0f}) {
    Fetch<<<grid, block>>>(tex_point, out, shift, shift);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(host.data(), out, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        const int sx = static_cast<int>(std::floor(x + shift)), sy = static_cast<int>(std::floor(y + shift));
        const float want = Texel(img, sx, sy);
        if (host[y * kWidth + x] != want) {
          return std::fprintf(stderr, "point (%d,%d) shift %g: %f, expected %f\n", x, y, shift,
                              host[y * kWidth + x], want), 1;
        }
      }
    }
  }

  // Bilinear filtering with normalized coordinates along a row.
  cudaTextureDesc linear = point;
  linear.filterMode = cudaFilterModeLinear;
  linear.normalizedCoords = 1;
  cudaTextureObject_t tex_linear;
  CHECK(cudaCreateTextureObject(&tex_linear, &res, &linear, nullptr));
  const float u = 0.1f, v = 0.37f;
  Sample<<<1, 64>>>(tex_linear, out, u, v);
  std::vector<float> samples(64);
  CHECK(cudaMemcpy(samples.data(), out, 64 * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) {
    const float want = Bilinear(img, (u + i * 0.013f) * kWidth, v * kHeight);
    if (std::fabs(samples[i] - want) > 5e-3f) {  // a weight step of 1/256 at most
      return std::fprintf(stderr, "linear sample %d: %f, expected %f\n", i, samples[i], want), 1;
    }
  }

  // Surfaces: read one array, write 1 - v into the other, copy it back.
  res.res.array.array = array;
  cudaSurfaceObject_t surf_in, surf_out;
  CHECK(cudaCreateSurfaceObject(&surf_in, &res));
  res.res.array.array = inverted;
  CHECK(cudaCreateSurfaceObject(&surf_out, &res));
  Invert<<<grid, block>>>(surf_in, surf_out);
  CHECK(cudaMemcpy2DFromArray(host.data(), kWidth * sizeof(float), inverted, 0, 0,
                              kWidth * sizeof(float), kHeight, cudaMemcpyDeviceToHost));
  for (int i = 0; i < kWidth * kHeight; ++i) {
    if (host[i] != 1.0f - img[i]) return std::fprintf(stderr, "surface %d: %f\n", i, host[i]), 1;
  }

  CHECK(cudaDestroySurfaceObject(surf_in));
  CHECK(cudaDestroySurfaceObject(surf_out));
  CHECK(cudaDestroyTextureObject(tex_point));
  CHECK(cudaDestroyTextureObject(tex_linear));
  CHECK(cudaFreeArray(array));
  CHECK(cudaFreeArray(inverted));
  CHECK(cudaFree(out));
  std::printf("arrays and textures: ok\n");
  return 0;
}
