/* Surface objects: reads and writes through surf2Dread/surf2Dwrite (and the layered and 3D
 * forms) round trip through arrays; the boundary modes: .zero ignores writes and reads zeros
 * outside, .clamp goes to the nearest element, .trap ends the kernel with a sticky error in its
 * own context only, and no access ever lands outside the array (the rest of it is compared
 * after every out-of-bounds access). */
#include "common.h"

static CUmodule module;

static CUfunction Fn(const char* name) {
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, module, name));
  return f;
}

static CUarray Array(size_t w, size_t h, size_t d, CUarray_format format, unsigned channels,
                     unsigned flags) {
  CUDA_ARRAY3D_DESCRIPTOR desc;
  memset(&desc, 0, sizeof(desc));
  desc.Width = w;
  desc.Height = h;
  desc.Depth = d;
  desc.Format = format;
  desc.NumChannels = channels;
  desc.Flags = flags;
  CUarray a;
  CHECK(cuArray3DCreate(&a, &desc));
  return a;
}

static CUsurfObject Surface(CUarray a) {
  CUDA_RESOURCE_DESC r;
  memset(&r, 0, sizeof(r));
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  CUsurfObject s;
  CHECK(cuSurfObjectCreate(&s, &r));
  return s;
}

enum { W = 13, H = 5 };

static void RoundTrip(void) {
  CUarray in = Array(W, H, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  CUarray out = Array(W, H, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  float src[H][W], got[H][W];
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) src[y][x] = 0.5f * x - 3.0f * y;
  CHECK(cuMemcpyHtoA(in, 0, src, sizeof(src)));
  CUsurfObject sin = Surface(in), sout = Surface(out);
  CUDA_RESOURCE_DESC r;
  CHECK(cuSurfObjectGetResourceDesc(&r, sin));
  EXPECT_TRUE(r.resType == CU_RESOURCE_TYPE_ARRAY && r.res.array.hArray == in);
  int w = W, h = H;
  void* args[] = {&sin, &sout, &w, &h};
  CHECK(cuLaunchKernel(Fn("surface_scale"), 1, H, 1, 32, 1, 1, 0, 0, args, NULL));
  CHECK(cuMemcpyAtoH(got, out, 0, sizeof(got)));
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) EXPECT_TRUE(got[y][x] == 2.0f * src[y][x] + 1.0f);

  /* Boundary modes, outside and inside. */
  CUdeviceptr seen;
  CHECK(cuMemAlloc(&seen, 8));
  float before[H][W];
  CHECK(cuMemcpyAtoH(before, out, 0, sizeof(before)));
  const int points[3][2] = {{W, 0}, {-1, 2}, {3, H + 4}};
  for (int k = 0; k < 3; ++k) {
    int x = points[k][0], y = points[k][1];
    void* bargs[] = {&sout, &x, &y, &seen};
    CHECK(cuLaunchKernel(Fn("surface_bounds"), 1, 1, 1, 1, 1, 1, 0, 0, bargs, NULL));
    float v[2];
    CHECK(cuMemcpyDtoH(v, seen, sizeof(v)));
    EXPECT_TRUE(v[0] == 0.0f);  /* .zero: the write went nowhere, the read saw zeros */
    EXPECT_TRUE(v[1] == 9.0f);  /* .clamp: written to and read from the nearest element */
    const int cx = x < 0 ? 0 : (x >= W ? W - 1 : x), cy = y < 0 ? 0 : (y >= H ? H - 1 : y);
    before[cy][cx] = 9.0f;
    CHECK(cuMemcpyAtoH(got, out, 0, sizeof(got)));
    EXPECT_TRUE(memcmp(got, before, sizeof(got)) == 0);  /* nothing else changed */
  }
  int x = 4, y = 1;
  void* bargs[] = {&sout, &x, &y, &seen};
  CHECK(cuLaunchKernel(Fn("surface_bounds"), 1, 1, 1, 1, 1, 1, 0, 0, bargs, NULL));
  float v[2];
  CHECK(cuMemcpyDtoH(v, seen, sizeof(v)));
  EXPECT_TRUE(v[0] == 7.0f && v[1] == 9.0f);
  CHECK(cuMemFree(seen));
  CHECK(cuSurfObjectDestroy(sin));
  CHECK(cuSurfObjectDestroy(sout));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuSurfObjectDestroy(sout));
  CHECK(cuArrayDestroy(in));
  CHECK(cuArrayDestroy(out));
}

static void LayersAnd3D(void) {
  /* uchar4 elements, x in bytes: a layered array written whole, a 3D one read and written. */
  CUarray layered = Array(6, 3, 4, CU_AD_FORMAT_UNSIGNED_INT8, 4,
                          CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST);
  CUsurfObject s = Surface(layered);
  int w = 6, h = 3, layers = 4;
  void* args[] = {&s, &w, &h, &layers};
  CHECK(cuLaunchKernel(Fn("surface_layers"), 3, 4, 1, 32, 1, 1, 0, 0, args, NULL));
  unsigned char got[4][3][6][4];
  CHECK(cuMemcpyAtoH(got, layered, 0, sizeof(got)));
  for (int l = 0; l < 4; ++l)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 6; ++x)
        EXPECT_TRUE(got[l][y][x][0] == x && got[l][y][x][1] == y && got[l][y][x][2] == l &&
                    got[l][y][x][3] == 255);
  CHECK(cuSurfObjectDestroy(s));
  CHECK(cuArrayDestroy(layered));

  CUarray vol = Array(5, 2, 3, CU_AD_FORMAT_UNSIGNED_INT8, 4, CUDA_ARRAY3D_SURFACE_LDST);
  unsigned char src[3][2][5][4], back[3][2][5][4];
  for (size_t i = 0; i < sizeof(src); ++i) ((unsigned char*)src)[i] = (unsigned char)(i * 3);
  CHECK(cuMemcpyHtoA(vol, 0, src, sizeof(src)));
  s = Surface(vol);
  int d = 3;
  w = 5;
  h = 2;
  void* vargs[] = {&s, &w, &h, &d};
  CHECK(cuLaunchKernel(Fn("surface_3d"), 2, 3, 1, 32, 1, 1, 0, 0, vargs, NULL));
  CHECK(cuMemcpyAtoH(back, vol, 0, sizeof(back)));
  for (int z = 0; z < 3; ++z)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 5; ++x)
        for (int c = 0; c < 4; ++c)
          EXPECT_TRUE(back[z][y][x][c] == (unsigned char)(src[z][y][x][c] + c + 1));
  CHECK(cuSurfObjectDestroy(s));
  CHECK(cuArrayDestroy(vol));
}

static void Refused(void) {
  /* A surface needs an array made for surfaces, and an array at all. */
  CUarray plain = Array(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0);
  CUDA_RESOURCE_DESC r;
  memset(&r, 0, sizeof(r));
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = plain;
  CUsurfObject s;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuSurfObjectCreate(&s, &r));
  CHECK(cuArrayDestroy(plain));
  r.resType = CU_RESOURCE_TYPE_LINEAR;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuSurfObjectCreate(&s, &r));
}

/* .trap out of bounds ends the kernel: ILLEGAL_ADDRESS, sticky in that context, while another
 * context goes on. A texture object used as a surface
 * faults the same way. */
static void Trap(CUdevice dev, CUcontext primary, int texture_as_surface) {
  CUcontext other;
  CHECK(cuCtxCreate(&other, NULL, 0, dev));
  CUmodule m;
  CHECK(cuModuleLoadData(&m, ReadPtx("textures")));
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, m, "surface_trap"));
  CUarray a = Array(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  float zeros[16] = {0};
  CHECK(cuMemcpyHtoA(a, 0, zeros, sizeof(zeros)));
  unsigned long long object;
  if (texture_as_surface) {
    CUDA_RESOURCE_DESC r;
    memset(&r, 0, sizeof(r));
    r.resType = CU_RESOURCE_TYPE_ARRAY;
    r.res.array.hArray = a;
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof(td));
    CHECK(cuTexObjectCreate(&object, &r, &td, NULL));
  } else {
    object = Surface(a);
  }
  int x = texture_as_surface ? 1 : 4, y = 0;
  void* args[] = {&object, &x, &y};
  CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
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
  RoundTrip();
  LayersAnd3D();
  Refused();
  Trap(dev, ctx, 0);
  Trap(dev, ctx, 1);
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  printf("surfaces_drv: ok\n");
  return 0;
}
