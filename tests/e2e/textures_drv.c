/* Texture objects: every addressing mode with point and linear filtering, normalized and
 * unnormalized coordinates, each array format and read mode, sRGB, linear and pitch-2D
 * resources, 3D, layered and cubemap textures, mipmap levels, gathers, and descriptors the
 * driver must refuse. textures_flat_drv.c is the part every adapter runs (one-level 1D and 2D
 * textures: what the cuda adapter makes). Every expected value is computed here from the CUDA programming guide's
 * texture-fetching formulas (docs/textures.md), never taken from the engine. */
#include <math.h>

#include "common.h"

static CUmodule module;

static CUfunction Fn(const char* name) {
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, module, name));
  return f;
}

/* Runs `name`(tex, in, out, n) over n points: `in` holds n elements of in_size bytes, `out`
 * gets n elements of out_size bytes. */
static void Run(const char* name, unsigned long long object, const void* in, size_t in_size,
                void* out, size_t out_size, int n) {
  CUdeviceptr din, dout;
  CHECK(cuMemAlloc(&din, in_size * n));
  CHECK(cuMemAlloc(&dout, out_size * n));
  CHECK(cuMemcpyHtoD(din, in, in_size * n));
  void* args[] = {&object, &din, &dout, &n};
  CHECK(cuLaunchKernel(Fn(name), (n + 63) / 64, 1, 1, 64, 1, 1, 0, 0, args, NULL));
  CHECK(cuMemcpyDtoH(out, dout, out_size * n));
  CHECK(cuMemFree(din));
  CHECK(cuMemFree(dout));
}

static CUtexObject ArrayTexture(CUarray a, CUaddress_mode mode, CUfilter_mode filter,
                                unsigned flags, float border) {
  CUDA_RESOURCE_DESC r;
  memset(&r, 0, sizeof(r));
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUDA_TEXTURE_DESC t;
  memset(&t, 0, sizeof(t));
  t.addressMode[0] = t.addressMode[1] = t.addressMode[2] = mode;
  t.filterMode = filter;
  t.flags = flags;
  t.borderColor[0] = t.borderColor[1] = t.borderColor[2] = t.borderColor[3] = border;
  CUtexObject tex;
  CHECK(cuTexObjectCreate(&tex, &r, &t, NULL));
  return tex;
}

static CUarray Array2D(size_t w, size_t h, CUarray_format format, unsigned channels,
                       const void* data, size_t element) {
  CUDA_ARRAY_DESCRIPTOR d = {w, h, format, channels};
  CUarray a;
  CHECK(cuArrayCreate(&a, &d));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = data;
  c.srcPitch = w * element;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = w * element;
  c.Height = h ? h : 1;
  CHECK(cuMemcpy2D(&c));
  return a;
}

/* --- The programming guide's formulas --------------------------------------------------- */

enum { W = 4, H = 3 };
static float grid[H][W];

/* Texture addressing on a normalized coordinate (the guide's "Texture Addressing"): the
 * coordinate the fetch uses, or NAN for the border. */
static float AddressNormalized(float x, int mode, int n) {
  switch (mode) {
    case CU_TR_ADDRESS_MODE_WRAP:
      return x - floorf(x);
    case CU_TR_ADDRESS_MODE_MIRROR: {
      float f = x - floorf(x);
      return ((long)floorf(x) % 2 == 0) ? f : 1.0f - f;
    }
    case CU_TR_ADDRESS_MODE_BORDER:
      return (x < 0 || x >= 1) ? NAN : x;
    default:
      /* The guide clamps to 1 - 1/N, the start of the last texel; its middle, (N - 0.5) / N,
       * names the same texel without single-precision rounding taking it to the one before. */
      return x < 0 ? 0 : (x >= 1 ? (n - 0.5f) / n : x);
  }
}

/* A texel index under a mode, for the neighbours linear filtering reads (-1: border). */
static int AddressIndex(int i, int n, int mode) {
  switch (mode) {
    case CU_TR_ADDRESS_MODE_WRAP:
      return ((i % n) + n) % n;
    case CU_TR_ADDRESS_MODE_MIRROR: {
      int m = ((i % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case CU_TR_ADDRESS_MODE_BORDER:
      return (i < 0 || i >= n) ? -1 : i;
    default:
      return i < 0 ? 0 : (i >= n ? n - 1 : i);
  }
}

/* The 9-bit fixed-point weight: 8 bits of fraction. */
static float Weight(float f) { return nearbyintf(f * 256.0f) / 256.0f; }

static float Texel(int i, int j, int mode, float border) {
  int x = AddressIndex(i, W, mode), y = AddressIndex(j, H, mode);
  return (x < 0 || y < 0) ? border : grid[y][x];
}

static float Reference(float x, float y, int mode, int linear, int normalized, float border) {
  if (!normalized && (mode == CU_TR_ADDRESS_MODE_WRAP || mode == CU_TR_ADDRESS_MODE_MIRROR)) {
    mode = CU_TR_ADDRESS_MODE_CLAMP;
  }
  if (!linear) {
    /* Nearest-point sampling: tex(x) = T[floor(x)], after addressing. */
    float u, v;
    if (normalized) {
      u = AddressNormalized(x, mode, W);
      v = AddressNormalized(y, mode, H);
      if (isnan(u) || isnan(v)) return border;
      return grid[(int)floorf(v * H)][(int)floorf(u * W)];
    }
    return Texel((int)floorf(x), (int)floorf(y), mode, border);
  }
  /* Linear filtering: tex(x, y) = (1-a)(1-b)T[i,j] + a(1-b)T[i+1,j] + (1-a)bT[i,j+1] +
   * abT[i+1,j+1], xB = x - 0.5, yB = y - 0.5, i = floor(xB), a = frac(xB) (9-bit). */
  float u = normalized ? x * W : x, v = normalized ? y * H : y;
  float xb = u - 0.5f, yb = v - 0.5f;
  int i = (int)floorf(xb), j = (int)floorf(yb);
  float a = Weight(xb - floorf(xb)), b = Weight(yb - floorf(yb));
  return (1 - a) * (1 - b) * Texel(i, j, mode, border) + a * (1 - b) * Texel(i + 1, j, mode, border) +
         (1 - a) * b * Texel(i, j + 1, mode, border) + a * b * Texel(i + 1, j + 1, mode, border);
}

static void AddressingAndFiltering(void) {
  for (int y = 0; y < H; ++y) {
    for (int x = 0; x < W; ++x) grid[y][x] = 1.5f * x + 10.0f * y + 0.25f;
  }
  CUarray a = Array2D(W, H, CU_AD_FORMAT_FLOAT, 1, grid, 4);
  static const float xs[] = {-1.3f, -0.2f, 0.3f, 1.6f, 2.5f, 3.7f, 4.4f, 6.9f};
  static const float ys[] = {-0.6f, 0.4f, 1.75f, 3.3f};
  enum { N = 32 };
  float coords[N][2], out[N];
  const float border = 0.75f;
  for (int normalized = 0; normalized < 2; ++normalized) {
    for (int mode = 0; mode < 4; ++mode) {
      for (int linear = 0; linear < 2; ++linear) {
        CUtexObject t = ArrayTexture(a, (CUaddress_mode)mode, linear ? CU_TR_FILTER_MODE_LINEAR
                                                                     : CU_TR_FILTER_MODE_POINT,
                                     normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0, border);
        for (int k = 0; k < N; ++k) {
          coords[k][0] = normalized ? xs[k % 8] / W : xs[k % 8];
          coords[k][1] = normalized ? ys[k / 8] / H : ys[k / 8];
        }
        Run("fetch2d_float", t, coords, 8, out, 4, N);
        for (int k = 0; k < N; ++k) {
          const float want = Reference(coords[k][0], coords[k][1], mode, linear, normalized,
                                       border);
          if (!Near(out[k], want)) {
            fprintf(stderr, "mode %d linear %d normalized %d at (%g, %g): %.7g, expected %.7g\n",
                    mode, linear, normalized, coords[k][0], coords[k][1], out[k], want);
            exit(1);
          }
        }
        CHECK(cuTexObjectDestroy(t));
      }
    }
  }
  CHECK(cuArrayDestroy(a));
}

/* --- formats and read modes ------------------------------------------------------------- */

static float Srgb(float c) { return c <= 0.04045f ? c / 12.92f : powf((c + 0.055f) / 1.055f, 2.4f); }

static void CenterFetches(float coords[4][2]) {
  for (int k = 0; k < 4; ++k) coords[k][0] = k + 0.5f, coords[k][1] = 0.5f;
}

static void Formats(void) {
  float coords[4][2], f[4][4];
  int iv[4][4];
  CenterFetches(coords);
  /* 8-bit unsigned, four channels: normalized (v / 255) by default, integers on request, and
   * through the sRGB curve (not alpha). */
  unsigned char u8[4][4] = {{0, 1, 128, 255}, {7, 64, 200, 3}, {255, 254, 10, 100}, {9, 99, 199, 0}};
  CUarray a = Array2D(4, 1, CU_AD_FORMAT_UNSIGNED_INT8, 4, u8, 4);
  CUtexObject t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  Run("fetch2d", t, coords, 8, f, 16, 4);
  for (int k = 0; k < 4; ++k) {
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(f[k][c], u8[k][c] / 255.0f);
  }
  CHECK(cuTexObjectDestroy(t));
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, CU_TRSF_READ_AS_INTEGER, 0);
  Run("fetch2d_int", t, coords, 8, iv, 16, 4);
  for (int k = 0; k < 4; ++k) {
    for (int c = 0; c < 4; ++c) EXPECT_TRUE(iv[k][c] == u8[k][c]);
  }
  CHECK(cuTexObjectDestroy(t));
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, CU_TRSF_SRGB, 0);
  Run("fetch2d", t, coords, 8, f, 16, 4);
  for (int k = 0; k < 4; ++k) {
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(f[k][c], Srgb(u8[k][c] / 255.0f));
    EXPECT_NEAR(f[k][3], u8[k][3] / 255.0f);
  }
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* 8-bit signed: max(v / 127, -1). */
  signed char s8[4][4] = {{-128, -127, 0, 127}, {1, -1, 64, -64}, {100, -100, 5, -5}, {2, 3, 4, 5}};
  a = Array2D(4, 1, CU_AD_FORMAT_SIGNED_INT8, 4, s8, 4);
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  Run("fetch2d", t, coords, 8, f, 16, 4);
  for (int k = 0; k < 4; ++k) {
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(f[k][c], fmaxf(s8[k][c] / 127.0f, -1.0f));
  }
  CHECK(cuTexObjectDestroy(t));
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, CU_TRSF_READ_AS_INTEGER, 0);
  Run("fetch2d_int", t, coords, 8, iv, 16, 4);
  for (int k = 0; k < 4; ++k) {
    for (int c = 0; c < 4; ++c) EXPECT_TRUE(iv[k][c] == s8[k][c]);
  }
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* 16-bit unsigned, two channels: v / 65535; the missing channels read 0 and 1. */
  unsigned short u16[4][2] = {{0, 65535}, {1, 32768}, {1000, 2}, {65534, 77}};
  a = Array2D(4, 1, CU_AD_FORMAT_UNSIGNED_INT16, 2, u16, 4);
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  Run("fetch2d", t, coords, 8, f, 16, 4);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(f[k][0], u16[k][0] / 65535.0f);
    EXPECT_NEAR(f[k][1], u16[k][1] / 65535.0f);
    EXPECT_NEAR(f[k][2], 0.0f);
    EXPECT_NEAR(f[k][3], 1.0f);
  }
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* 16-bit signed, one channel: max(v / 32767, -1). */
  short s16[4] = {-32768, -32767, 12345, 32767};
  a = Array2D(4, 1, CU_AD_FORMAT_SIGNED_INT16, 1, s16, 2);
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  Run("fetch2d", t, coords, 8, f, 16, 4);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(f[k][0], fmaxf(s16[k] / 32767.0f, -1.0f));
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* Half floats (bit patterns of 1.0, -2.5, 0.5, 65504, ...), read as floats. */
  unsigned short half[4][2] = {{0x3c00, 0xc100}, {0x3800, 0x7bff}, {0x0000, 0x8000}, {0x4248, 0x3555}};
  const float half_value[4][2] = {{1.0f, -2.5f}, {0.5f, 65504.0f}, {0.0f, -0.0f},
                                  {3.140625f, 0.333251953125f}};
  a = Array2D(4, 1, CU_AD_FORMAT_HALF, 2, half, 4);
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  Run("fetch2d", t, coords, 8, f, 16, 4);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(f[k][0], half_value[k][0]);
    EXPECT_NEAR(f[k][1], half_value[k][1]);
  }
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* 32-bit signed integers are always read as integers; linear filtering on them is refused. */
  int s32[4] = {-7, 2147483647, 0, -2147483647 - 1};
  a = Array2D(4, 1, CU_AD_FORMAT_SIGNED_INT32, 1, s32, 4);
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  Run("fetch2d_int", t, coords, 8, iv, 16, 4);
  for (int k = 0; k < 4; ++k) EXPECT_TRUE(iv[k][0] == s32[k]);
  CHECK(cuTexObjectDestroy(t));
  CUDA_RESOURCE_DESC r;
  memset(&r, 0, sizeof(r));
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUDA_TEXTURE_DESC td;
  memset(&td, 0, sizeof(td));
  td.filterMode = CU_TR_FILTER_MODE_LINEAR;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&t, &r, &td, NULL));
  CHECK(cuArrayDestroy(a));

  /* Four floats, linear filtering between two texels with weight 0.25 (exact in 9 bits). */
  float f4[2][4] = {{0, 1, 2, 3}, {4, 9, -2, 7}};
  a = Array2D(2, 1, CU_AD_FORMAT_FLOAT, 4, f4, 16);
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 0);
  float at[1][2] = {{0.75f, 0.5f}};
  Run("fetch2d", t, at, 8, f, 16, 1);
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(f[0][c], 0.75f * f4[0][c] + 0.25f * f4[1][c]);
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));
}

/* --- linear and pitch-2D memory --------------------------------------------------------- */

static void MemoryResources(void) {
  float values[16][4];
  for (int i = 0; i < 16; ++i) {
    for (int c = 0; c < 4; ++c) values[i][c] = i * 4.0f + c;
  }
  CUdeviceptr buffer;
  CHECK(cuMemAlloc(&buffer, sizeof(values)));
  CHECK(cuMemcpyHtoD(buffer, values, sizeof(values)));
  CUDA_RESOURCE_DESC r;
  memset(&r, 0, sizeof(r));
  r.resType = CU_RESOURCE_TYPE_LINEAR;
  r.res.linear.devPtr = buffer;
  r.res.linear.format = CU_AD_FORMAT_FLOAT;
  r.res.linear.numChannels = 4;
  r.res.linear.sizeInBytes = sizeof(values);
  CUDA_TEXTURE_DESC td;
  memset(&td, 0, sizeof(td));
  CUtexObject t;
  CHECK(cuTexObjectCreate(&t, &r, &td, NULL));
  int idx[6] = {0, 5, 15, 16, -1, 1000};
  float out[6][4];
  Run("fetch_linear", t, idx, 4, out, 16, 6);
  for (int k = 0; k < 6; ++k) {
    for (int c = 0; c < 4; ++c) {
      /* tex1Dfetch outside the buffer reads zeros. */
      const float want = (idx[k] >= 0 && idx[k] < 16) ? values[idx[k]][c] : 0.0f;
      EXPECT_NEAR(out[k][c], want);
    }
  }
  /* The descriptors come back as given. */
  CUDA_RESOURCE_DESC got_r;
  CHECK(cuTexObjectGetResourceDesc(&got_r, t));
  EXPECT_TRUE(memcmp(&got_r, &r, sizeof(r)) == 0);
  CUDA_TEXTURE_DESC got_t;
  CHECK(cuTexObjectGetTextureDesc(&got_t, t));
  EXPECT_TRUE(memcmp(&got_t, &td, sizeof(td)) == 0);
  CUDA_RESOURCE_VIEW_DESC view;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexObjectGetResourceViewDesc(&view, t));
  CHECK(cuTexObjectDestroy(t));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuTexObjectDestroy(t));
  /* A resource past its allocation, and resource views, are refused. */
  r.res.linear.sizeInBytes = sizeof(values) + 16;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&t, &r, &td, NULL));
  r.res.linear.sizeInBytes = sizeof(values);
  memset(&view, 0, sizeof(view));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuTexObjectCreate(&t, &r, &td, &view));
  CHECK(cuMemFree(buffer));

  /* Pitch-2D: 5 x 3 floats in rows of cuMemAllocPitch's pitch. */
  CUdeviceptr image;
  size_t pitch;
  CHECK(cuMemAllocPitch(&image, &pitch, 5 * 4, 3, 4));
  float rows[3][5];
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 5; ++x) rows[y][x] = 100.0f * y + x;
  }
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = rows;
  c.srcPitch = 20;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = image;
  c.dstPitch = pitch;
  c.WidthInBytes = 20;
  c.Height = 3;
  CHECK(cuMemcpy2D(&c));
  memset(&r, 0, sizeof(r));
  r.resType = CU_RESOURCE_TYPE_PITCH2D;
  r.res.pitch2D.devPtr = image;
  r.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  r.res.pitch2D.numChannels = 1;
  r.res.pitch2D.width = 5;
  r.res.pitch2D.height = 3;
  r.res.pitch2D.pitchInBytes = pitch;
  CHECK(cuTexObjectCreate(&t, &r, &td, NULL));
  float coords[15][2], got[15];
  for (int k = 0; k < 15; ++k) coords[k][0] = k % 5 + 0.5f, coords[k][1] = k / 5 + 0.5f;
  Run("fetch2d_float", t, coords, 8, got, 4, 15);
  for (int k = 0; k < 15; ++k) EXPECT_NEAR(got[k], rows[k / 5][k % 5]);
  CHECK(cuTexObjectDestroy(t));
  r.res.pitch2D.pitchInBytes = 16; /* below a row */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&t, &r, &td, NULL));
  r.res.pitch2D.pitchInBytes = pitch;
  r.res.pitch2D.height = 4; /* past the allocation */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexObjectCreate(&t, &r, &td, NULL));
  CHECK(cuMemFree(image));
}

/* --- 3D, layered, cubemap, mipmaps, gather ---------------------------------------------- */

static void Geometries(void) {
  /* 3D: 3 x 2 x 2 floats, trilinear at one point, weights 0.25, 0.5, 0.75. */
  float vol[2][2][3];
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x) vol[z][y][x] = x + 3.0f * y + 7.0f * z + (x == 2 ? 5 : 0);
  CUDA_ARRAY3D_DESCRIPTOR d;
  memset(&d, 0, sizeof(d));
  d.Width = 3;
  d.Height = 2;
  d.Depth = 2;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  CUarray a;
  CHECK(cuArray3DCreate(&a, &d));
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = vol;
  c.srcPitch = 12;
  c.srcHeight = 2;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = 12;
  c.Height = 2;
  c.Depth = 2;
  CHECK(cuMemcpy3D(&c));
  CUtexObject t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 0);
  float p[1][4] = {{1.75f, 1.0f, 1.25f, 0}}, out[8][4];
  Run("fetch3d", t, p, 16, out, 16, 1);
  {
    const float a0 = 0.25f, b0 = 0.5f, g0 = 0.75f; /* frac(x - 0.5) etc. */
    float want = 0;
    for (int dz = 0; dz < 2; ++dz)
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx)
          want += (dx ? a0 : 1 - a0) * (dy ? b0 : 1 - b0) * (dz ? g0 : 1 - g0) *
                  vol[dz][dy][1 + dx];
    EXPECT_NEAR(out[0][0], want);
  }
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* Layered 2D: 2 x 2 texels, 3 layers; a layer past the last reads the last. */
  float layers[3][2][2];
  for (int l = 0; l < 3; ++l)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x) layers[l][y][x] = 100.0f * l + 10.0f * y + x;
  d.Width = 2;
  d.Height = 2;
  d.Depth = 3;
  d.Flags = CUDA_ARRAY3D_LAYERED;
  CHECK(cuArray3DCreate(&a, &d));
  c.srcHost = layers;
  c.srcPitch = 8;
  c.srcHeight = 2;
  c.dstArray = a;
  c.WidthInBytes = 8;
  c.Height = 2;
  c.Depth = 3;
  CHECK(cuMemcpy3D(&c));
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  float lp[4][4] = {{0.5f, 0.5f, 0, 0}, {1.5f, 0.5f, 0, 1}, {0.5f, 1.5f, 0, 2}, {1.5f, 1.5f, 0, 9}};
  Run("fetch_layered", t, lp, 16, out, 16, 4);
  EXPECT_NEAR(out[0][0], layers[0][0][0]);
  EXPECT_NEAR(out[1][0], layers[1][0][1]);
  EXPECT_NEAR(out[2][0], layers[2][1][0]);
  EXPECT_NEAR(out[3][0], layers[2][1][1]);
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* Cubemap, 2 x 2 per face, face f holding 10 f + texel: a direction along each axis picks
   * its face (the guide's cubemap table), and leaning towards +s, +t its texel. */
  float faces[6][2][2];
  for (int f = 0; f < 6; ++f)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x) faces[f][y][x] = 10.0f * f + 2 * y + x;
  d.Depth = 6;
  d.Flags = CUDA_ARRAY3D_CUBEMAP;
  CHECK(cuArray3DCreate(&a, &d));
  c.srcHost = faces;
  c.Depth = 6;
  c.dstArray = a;
  CHECK(cuMemcpy3D(&c));
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT,
                   CU_TRSF_NORMALIZED_COORDINATES, 0);
  /* Per face: major axis m and the (s, t) directions from the guide's table. */
  float dirs[6][4] = {{1, -0.5f, -0.5f, 0}, {-1, -0.5f, 0.5f, 0}, {0.5f, 1, 0.5f, 0},
                      {0.5f, -1, -0.5f, 0}, {0.5f, -0.5f, 1, 0}, {-0.5f, -0.5f, -1, 0}};
  Run("fetch_cube", t, dirs, 16, out, 16, 6);
  for (int f = 0; f < 6; ++f) {
    const float* v = dirs[f];
    float sc, tc, m;
    switch (f) {
      case 0: sc = -v[2]; tc = -v[1]; m = v[0]; break;
      case 1: sc = v[2]; tc = -v[1]; m = -v[0]; break;
      case 2: sc = v[0]; tc = v[2]; m = v[1]; break;
      case 3: sc = v[0]; tc = -v[2]; m = -v[1]; break;
      case 4: sc = v[0]; tc = -v[1]; m = v[2]; break;
      default: sc = -v[0]; tc = -v[1]; m = -v[2]; break;
    }
    const float s = (sc / m + 1) / 2, tt = (tc / m + 1) / 2;
    EXPECT_NEAR(out[f][0], faces[f][(int)(tt * 2)][(int)(s * 2)]);
  }
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));

  /* Mipmaps: 8 x 8, four levels, level l all (l + 1) * 10; point and linear between levels,
   * explicit levels and gradients. */
  memset(&d, 0, sizeof(d));
  d.Width = 8;
  d.Height = 8;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  CUmipmappedArray m;
  CHECK(cuMipmappedArrayCreate(&m, &d, 4));
  for (unsigned l = 0; l < 4; ++l) {
    CUarray level;
    CHECK(cuMipmappedArrayGetLevel(&level, m, l));
    float v[64];
    for (int i = 0; i < 64; ++i) v[i] = (l + 1) * 10.0f;
    const size_t w = 8 >> l;
    CHECK(cuMemcpyHtoA(level, 0, v, w * w * 4));
  }
  for (int mip_linear = 0; mip_linear < 2; ++mip_linear) {
    CUDA_RESOURCE_DESC r;
    memset(&r, 0, sizeof(r));
    r.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    r.res.mipmap.hMipmappedArray = m;
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof(td));
    td.flags = CU_TRSF_NORMALIZED_COORDINATES;
    td.mipmapFilterMode = mip_linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
    td.maxMipmapLevelClamp = 3;
    CHECK(cuTexObjectCreate(&t, &r, &td, NULL));
    float lods[5][4] = {{0.3f, 0.3f, 0, 0}, {0.3f, 0.3f, 1, 0}, {0.3f, 0.3f, 2.75f, 0},
                        {0.3f, 0.3f, 7, 0}, {0.3f, 0.3f, 1.25f, 0}};
    Run("fetch_lod", t, lods, 16, out, 16, 5);
    for (int k = 0; k < 5; ++k) {
      const float lod = fminf(lods[k][2], 3.0f);
      float want;
      if (mip_linear) {
        const int l0 = (int)floorf(lod);
        const int l1 = l0 + 1 > 3 ? 3 : l0 + 1;
        const float w = Weight(lod - floorf(lod));
        want = (1 - w) * (l0 + 1) * 10.0f + w * (l1 + 1) * 10.0f;
      } else {
        want = ((int)floorf(lod + 0.5f) + 1) * 10.0f;
      }
      EXPECT_NEAR(out[k][0], want);
    }
    /* Gradients of 2 and 4 texels per step (normalized 2/8, 4/8): levels 1 and 2. */
    float grads[2][4] = {{0.3f, 0.3f, 2.0f / 8, 2.0f / 8}, {0.3f, 0.3f, 0.5f, 0.25f}};
    Run("fetch_grad", t, grads, 16, out, 16, 2);
    EXPECT_NEAR(out[0][0], 20.0f);
    EXPECT_NEAR(out[1][0], 30.0f);
    CHECK(cuTexObjectDestroy(t));
  }
  CHECK(cuMipmappedArrayDestroy(m));

  /* tld4 (tex2Dgather, component 1): the second channel of the four texels bilinear
   * filtering reads, from (i, j+1) counter-clockwise. */
  float two[4][4][2];
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) two[y][x][0] = -1, two[y][x][1] = 10.0f * y + x;
  a = Array2D(4, 4, CU_AD_FORMAT_FLOAT, 2, two, 8);
  t = ArrayTexture(a, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0);
  float gp[2][2] = {{1.7f, 2.2f}, {0.1f, 3.9f}};
  Run("gather", t, gp, 8, out, 16, 2);
  for (int k = 0; k < 2; ++k) {
    const int i = (int)floorf(gp[k][0] - 0.5f), j = (int)floorf(gp[k][1] - 0.5f);
    const int di[4] = {0, 1, 1, 0}, dj[4] = {1, 1, 0, 0};
    for (int q = 0; q < 4; ++q) {
      int x = i + di[q], y = j + dj[q];
      x = x < 0 ? 0 : (x > 3 ? 3 : x);
      y = y < 0 ? 0 : (y > 3 ? 3 : y);
      EXPECT_NEAR(out[k][q], two[y][x][1]);
    }
  }
  CHECK(cuTexObjectDestroy(t));
  CHECK(cuArrayDestroy(a));
}

/* A handle that names no texture object faults its own context only. */
static void ForgedHandle(CUdevice dev, CUcontext primary) {
  CUcontext other;
  CHECK(cuCtxCreate(&other, NULL, 0, dev));
  CUmodule m;
  CHECK(cuModuleLoadData(&m, ReadPtx("textures")));
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, m, "fetch2d_float"));
  CUdeviceptr in, out;
  CHECK(cuMemAlloc(&in, 8));
  CHECK(cuMemAlloc(&out, 4));
  CHECK(cuMemsetD32(in, 0, 2));
  unsigned long long forged = 0xdeadbeefull;
  int n = 1;
  void* args[] = {&forged, &in, &out, &n};
  CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  CHECK(cuCtxDestroy(other));
  CHECK(cuCtxSetCurrent(primary));
  CHECK(cuCtxSynchronize());
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&module, ReadPtx("textures")));
  AddressingAndFiltering();
  Formats();
  MemoryResources();
#ifndef PVGPU_TEXTURES_FLAT_ONLY
  Geometries();
  ForgedHandle(dev, ctx);
#else
  (void)Geometries;
  (void)ForgedHandle;
#endif
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  printf("textures_drv: ok\n");
  return 0;
}
