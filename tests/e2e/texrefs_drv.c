/* Texture and surface references, the legacy API: a module of the kind CUDA 11's nvcc wrote
 * for `texture<float, 2>` and `surface<void, 2>` declarations (module variables `.texref` and
 * `.surfref`, and the deprecated `.tex` spelling), bound with cuTexRefSet* and
 * cuSurfRefSetArray: arrays with linear and point filtering, normalized coordinates and address
 * modes, rebinding between launches, linear and pitch-2D memory, txq, a surface written by a
 * kernel, the getters, the errors, and an unbound reference faulting its own context only.
 * nvcc 12 and later no longer compile references, so the module is written out here. Expected
 * values come from the CUDA programming guide's texture-fetching formulas. */
#include <math.h>

#include "common.h"

static const char kModule[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".global .texref tex2d;\n"
    ".global .texref tex1d, unused_ref;\n"
    ".global .surfref surf;\n"
    ".tex .u32 old_style;\n"
    "\n"
    "// sample2d(coords, out, n): out[i] = tex2D(tex2d, coords[2i], coords[2i+1]).x\n"
    ".visible .entry sample2d(.param .u64 coords, .param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<8>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [coords];\n"
    "  ld.param.u64 %rd2, [out];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.s32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  mul.wide.s32 %rd4, %r5, 8;\n"
    "  add.s64 %rd5, %rd1, %rd4;\n"
    "  ld.global.v2.f32 {%f1, %f2}, [%rd5];\n"
    "  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tex2d, {%f1, %f2}];\n"
    "  mul.wide.s32 %rd6, %r5, 4;\n"
    "  add.s64 %rd7, %rd2, %rd6;\n"
    "  st.global.f32 [%rd7], %f3;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    "\n"
    "// fetch1d(out, n): out[i] = tex1Dfetch(tex1d, i), under a predicate\n"
    ".visible .entry fetch1d(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<8>;\n"
    "  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.s32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  mov.f32 %f1, 0fBF800000;\n"
    "  setp.lt.s32 %p2, %r5, %r1;\n"
    "  @%p2 tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex1d, {%r5}];\n"
    "  mul.wide.s32 %rd2, %r5, 4;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.f32 [%rd3], %f1;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    "\n"
    "// sizes(out): out = {width, height} of tex2d (txq)\n"
    ".visible .entry sizes(.param .u64 out)\n"
    "{\n"
    "  .reg .b32 %r<3>;\n"
    "  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  txq.width.b32 %r1, [tex2d];\n"
    "  txq.height.b32 %r2, [tex2d];\n"
    "  st.global.v2.u32 [%rd1], {%r1, %r2};\n"
    "  ret;\n"
    "}\n"
    "\n"
    "// paint(w, h): surf2Dwrite(100 * y + x + 1, surf, 4 * x, y) for every element, then reads\n"
    "// it back with suld into element (x, y) + 1000 in the same launch: writes are visible.\n"
    ".visible .entry paint(.param .u32 w, .param .u32 h)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<10>;\n"
    "  ld.param.u32 %r1, [w];\n"
    "  ld.param.u32 %r2, [h];\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  mov.u32 %r4, %tid.y;\n"
    "  mad.lo.s32 %r5, %r4, 100, %r3;\n"
    "  add.s32 %r5, %r5, 1;\n"
    "  shl.b32 %r6, %r3, 2;\n"
    "  sust.b.2d.b32.trap [surf, {%r6, %r4}], {%r5};\n"
    "  suld.b.2d.b32.trap {%r7}, [surf, {%r6, %r4}];\n"
    "  add.s32 %r8, %r7, 1000;\n"
    "  sust.b.2d.b32.trap [surf, {%r6, %r4}], {%r8};\n"
    "  ret;\n"
    "}\n"
    "\n"
    "// old(out): out[0] = tex1Dfetch(old_style, 0): a reference nothing binds in this test\n"
    ".visible .entry old(.param .u64 out)\n"
    "{\n"
    "  .reg .b32 %r<2>;\n"
    "  .reg .f32 %f<5>;\n"
    "  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, 0;\n"
    "  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [old_style, {%r1}];\n"
    "  st.global.f32 [%rd1], %f1;\n"
    "  ret;\n"
    "}\n";

static CUmodule module;

static CUfunction Fn(const char* name) {
  CUfunction f;
  CHECK(cuModuleGetFunction(&f, module, name));
  return f;
}

enum { W = 4, H = 3, N = 9 };
static float grid[H][W];
static CUarray array2d;

/* The guide's formulas, for the modes this test uses. */
static int Clamp(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }
static float Weight(float f) { return nearbyintf(f * 256.0f) / 256.0f; } /* 9-bit, 8 fraction */
static float Bilinear(float x, float y) {
  float xb = x - 0.5f, yb = y - 0.5f;
  int i = (int)floorf(xb), j = (int)floorf(yb);
  float a = Weight(xb - floorf(xb)), b = Weight(yb - floorf(yb));
#define T(u, v) grid[Clamp(v, H)][Clamp(u, W)]
  return (1 - a) * (1 - b) * T(i, j) + a * (1 - b) * T(i + 1, j) + (1 - a) * b * T(i, j + 1) +
         a * b * T(i + 1, j + 1);
#undef T
}
static float PointWrapNormalized(float x, float y) {
  float u = x - floorf(x), v = y - floorf(y);
  return grid[(int)floorf(v * H)][(int)floorf(u * W)];
}

static void Sample(const float coords[N][2], float out[N]) {
  CUdeviceptr dc, dout;
  CHECK(cuMemAlloc(&dc, sizeof(float) * 2 * N));
  CHECK(cuMemAlloc(&dout, sizeof(float) * N));
  CHECK(cuMemcpyHtoD(dc, coords, sizeof(float) * 2 * N));
  unsigned n = N;
  void* args[] = {&dc, &dout, &n};
  CHECK(cuLaunchKernel(Fn("sample2d"), 1, 1, 1, 32, 1, 1, 0, 0, args, NULL));
  CHECK(cuMemcpyDtoH(out, dout, sizeof(float) * N));
  CHECK(cuMemFree(dc));
  CHECK(cuMemFree(dout));
}

static CUarray Array2D(unsigned flags) {
  CUDA_ARRAY3D_DESCRIPTOR d;
  memset(&d, 0, sizeof(d));
  d.Width = W;
  d.Height = H;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  d.Flags = flags;
  CUarray a;
  CHECK(cuArray3DCreate(&a, &d));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = grid;
  c.srcPitch = W * sizeof(float);
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = W * sizeof(float);
  c.Height = H;
  CHECK(cuMemcpy2D(&c));
  return a;
}

/* An array bound with linear filtering, then the same reference rebound (point sampling,
 * normalized coordinates, wrap) before the next launch. */
static void ArrayBinding(void) {
  CUtexref ref, again;
  CHECK(cuModuleGetTexRef(&ref, module, "tex2d"));
  CHECK(cuModuleGetTexRef(&again, module, "tex2d"));
  EXPECT_TRUE(ref == again);
  CUarray a = Array2D(0);
  array2d = a;
  CHECK(cuTexRefSetArray(ref, a, CU_TRSA_OVERRIDE_FORMAT));
  CHECK(cuTexRefSetFilterMode(ref, CU_TR_FILTER_MODE_LINEAR));
  CHECK(cuTexRefSetAddressMode(ref, 0, CU_TR_ADDRESS_MODE_CLAMP));
  CHECK(cuTexRefSetAddressMode(ref, 1, CU_TR_ADDRESS_MODE_CLAMP));
  const float coords[N][2] = {{0.5f, 0.5f}, {1.0f, 0.5f}, {1.3f, 1.7f}, {3.5f, 2.5f},
                              {-2.0f, 1.1f}, {2.9f, 9.0f}, {0.75f, 2.25f}, {2.0f, 2.0f},
                              {3.99f, 0.01f}};
  float out[N];
  Sample(coords, out);
  for (int i = 0; i < N; ++i) EXPECT_NEAR(out[i], Bilinear(coords[i][0], coords[i][1]));

  CHECK(cuTexRefSetFilterMode(ref, CU_TR_FILTER_MODE_POINT));
  CHECK(cuTexRefSetFlags(ref, CU_TRSF_NORMALIZED_COORDINATES));
  CHECK(cuTexRefSetAddressMode(ref, 0, CU_TR_ADDRESS_MODE_WRAP));
  CHECK(cuTexRefSetAddressMode(ref, 1, CU_TR_ADDRESS_MODE_WRAP));
  const float normalized[N][2] = {{0.1f, 0.1f}, {0.6f, 0.4f}, {1.3f, 0.9f}, {-0.2f, -0.5f},
                                  {2.95f, 1.5f}, {0.0f, 0.0f}, {0.99f, 0.99f}, {-1.1f, 3.4f},
                                  {0.3f, 0.7f}};
  Sample(normalized, out);
  for (int i = 0; i < N; ++i) {
    EXPECT_NEAR(out[i], PointWrapNormalized(normalized[i][0], normalized[i][1]));
  }

  /* txq through the reference. */
  CUdeviceptr dsizes;
  CHECK(cuMemAlloc(&dsizes, 8));
  void* args[] = {&dsizes};
  CHECK(cuLaunchKernel(Fn("sizes"), 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
  unsigned sizes[2];
  CHECK(cuMemcpyDtoH(sizes, dsizes, 8));
  EXPECT_TRUE(sizes[0] == W && sizes[1] == H);
  CHECK(cuMemFree(dsizes));

  /* The getters say what the setters said; an array binding has no address. */
  CUarray got_array;
  CHECK(cuTexRefGetArray(&got_array, ref));
  EXPECT_TRUE(got_array == a);
  CUdeviceptr no_address;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexRefGetAddress(&no_address, ref));
  CUarray_format format;
  int channels;
  CHECK(cuTexRefGetFormat(&format, &channels, ref));
  EXPECT_TRUE(format == CU_AD_FORMAT_FLOAT && channels == 1);
  CUaddress_mode mode;
  CHECK(cuTexRefGetAddressMode(&mode, ref, 1));
  EXPECT_TRUE(mode == CU_TR_ADDRESS_MODE_WRAP);
  CUfilter_mode filter;
  CHECK(cuTexRefGetFilterMode(&filter, ref));
  EXPECT_TRUE(filter == CU_TR_FILTER_MODE_POINT);
  unsigned flags;
  CHECK(cuTexRefGetFlags(&flags, ref));
  EXPECT_TRUE(flags == CU_TRSF_NORMALIZED_COORDINATES);
  float border[4] = {1, 2, 3, 4}, got_border[4];
  CHECK(cuTexRefSetBorderColor(ref, border));
  CHECK(cuTexRefGetBorderColor(got_border, ref));
  EXPECT_TRUE(memcmp(border, got_border, sizeof(border)) == 0);
  CHECK(cuTexRefSetMipmapLevelClamp(ref, 0.5f, 3.0f));
  float lo, hi;
  CHECK(cuTexRefGetMipmapLevelClamp(&lo, &hi, ref));
  EXPECT_TRUE(lo == 0.5f && hi == 3.0f);
  CHECK(cuTexRefSetMaxAnisotropy(ref, 4));
  int aniso;
  CHECK(cuTexRefGetMaxAnisotropy(&aniso, ref));
  EXPECT_TRUE(aniso == 4);

  /* Bad arguments. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexRefSetAddressMode(ref, 3, CU_TR_ADDRESS_MODE_WRAP));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexRefSetFormat(ref, CU_AD_FORMAT_FLOAT, 3));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexRefSetFlags(ref, 0x80000000u));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuTexRefSetArray(ref, (CUarray)&flags, 1));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE,
                cuTexRefSetFilterMode((CUtexref)&flags, CU_TR_FILTER_MODE_POINT));
  CHECK(cuParamSetTexRef(Fn("sample2d"), CU_PARAM_TR_DEFAULT, ref));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexRefDestroy(ref));  /* its module's */
}

/* Linear memory (tex1Dfetch) and pitch-2D memory. */
static void MemoryBindings(void) {
  enum { L = 50 };
  float data[L];
  for (int i = 0; i < L; ++i) data[i] = 0.5f * i - 3.0f;
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, sizeof(data)));
  CHECK(cuMemcpyHtoD(d, data, sizeof(data)));
  CUtexref ref;
  CHECK(cuModuleGetTexRef(&ref, module, "tex1d"));
  size_t offset = 99;
  CHECK(cuTexRefSetAddress(&offset, ref, d, sizeof(data)));
  EXPECT_TRUE(offset == 0);
  CHECK(cuTexRefSetFormat(ref, CU_AD_FORMAT_FLOAT, 1));
  CUdeviceptr got;
  CHECK(cuTexRefGetAddress(&got, ref));
  EXPECT_TRUE(got == d);
  CUarray no_array;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuTexRefGetArray(&no_array, ref));
  CUdeviceptr dout;
  CHECK(cuMemAlloc(&dout, sizeof(data)));
  unsigned n = L;
  void* args[] = {&dout, &n};
  CHECK(cuLaunchKernel(Fn("fetch1d"), 2, 1, 1, 32, 1, 1, 0, 0, args, NULL));
  float out[L];
  CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
  for (int i = 0; i < L; ++i) EXPECT_NEAR(out[i], data[i]);

  /* A binding the host refuses (past the end of the allocation) is the launch's error. */
  CHECK(cuTexRefSetAddress(NULL, ref, d, sizeof(data) * 4));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                cuLaunchKernel(Fn("fetch1d"), 2, 1, 1, 32, 1, 1, 0, 0, args, NULL));
  CHECK(cuTexRefSetAddress(NULL, ref, d, sizeof(data)));
  CHECK(cuLaunchKernel(Fn("fetch1d"), 2, 1, 1, 32, 1, 1, 0, 0, args, NULL));
  CHECK(cuCtxSynchronize());

  /* Pitch-2D memory through the 2D reference, point-sampled at texel centres. */
  CUdeviceptr pitched;
  size_t pitch;
  CHECK(cuMemAllocPitch(&pitched, &pitch, W * sizeof(float), H, 4));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = grid;
  c.srcPitch = W * sizeof(float);
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = pitched;
  c.dstPitch = pitch;
  c.WidthInBytes = W * sizeof(float);
  c.Height = H;
  CHECK(cuMemcpy2D(&c));
  CUtexref ref2;
  CHECK(cuModuleGetTexRef(&ref2, module, "tex2d"));
  CUDA_ARRAY_DESCRIPTOR desc = {W, H, CU_AD_FORMAT_FLOAT, 1};
  CHECK(cuTexRefSetAddress2D(ref2, &desc, pitched, pitch));
  CHECK(cuTexRefSetFlags(ref2, 0));
  CHECK(cuTexRefSetAddressMode(ref2, 0, CU_TR_ADDRESS_MODE_CLAMP));
  CHECK(cuTexRefSetAddressMode(ref2, 1, CU_TR_ADDRESS_MODE_CLAMP));
  float coords[N][2], samples[N];
  for (int i = 0; i < N; ++i) {
    coords[i][0] = (float)(i % W) + 0.5f;
    coords[i][1] = (float)(i % H) + 0.5f;
  }
  Sample(coords, samples);
  for (int i = 0; i < N; ++i) EXPECT_NEAR(samples[i], grid[i % H][i % W]);
  CHECK(cuMemFree(pitched));
  CHECK(cuMemFree(dout));
  CHECK(cuMemFree(d));
}

/* A surface reference: a kernel writes, reads back and rewrites every element. */
static void SurfaceBinding(void) {
  CUsurfref surf;
  CHECK(cuModuleGetSurfRef(&surf, module, "surf"));
  CUarray plain = Array2D(0);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuSurfRefSetArray(surf, plain, 0));
  CUarray a = Array2D(CUDA_ARRAY3D_SURFACE_LDST);
  CHECK(cuSurfRefSetArray(surf, a, 0));
  CUarray got;
  CHECK(cuSurfRefGetArray(&got, surf));
  EXPECT_TRUE(got == a);
  unsigned w = W, h = H;
  void* args[] = {&w, &h};
  CHECK(cuLaunchKernel(Fn("paint"), 1, 1, 1, W, H, 1, 0, 0, args, NULL));
  unsigned painted[H][W];
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = painted;
  c.dstPitch = W * sizeof(unsigned);
  c.WidthInBytes = W * sizeof(unsigned);
  c.Height = H;
  CHECK(cuMemcpy2D(&c));
  for (int y = 0; y < H; ++y) {
    for (int x = 0; x < W; ++x) EXPECT_TRUE(painted[y][x] == (unsigned)(100 * y + x + 1 + 1000));
  }
  CHECK(cuArrayDestroy(plain));
}

static void Lookups(void) {
  CUtexref ref;
  CUsurfref surf;
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuModuleGetTexRef(&ref, module, "no_such_reference"));
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuModuleGetTexRef(&ref, module, "surf"));
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuModuleGetSurfRef(&surf, module, "tex2d"));
  CHECK(cuModuleGetTexRef(&ref, module, "old_style"));
  CHECK(cuModuleGetTexRef(&ref, module, "unused_ref"));
  /* A reference is no global of the module's. */
  CUdeviceptr dptr;
  size_t bytes;
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal(&dptr, &bytes, module, "tex2d"));
  /* A reference of its own, which no kernel reads. */
  CUtexref alone;
  CHECK(cuTexRefCreate(&alone));
  CHECK(cuTexRefSetFilterMode(alone, CU_TR_FILTER_MODE_LINEAR));
  CUfilter_mode filter;
  CHECK(cuTexRefGetFilterMode(&filter, alone));
  EXPECT_TRUE(filter == CU_TR_FILTER_MODE_LINEAR);
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuParamSetTexRef(Fn("sample2d"), CU_PARAM_TR_DEFAULT, alone));
  CHECK(cuTexRefDestroy(alone));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuTexRefDestroy(alone));
}

/* In a context of its own: a module unloaded takes its references along, and a kernel reading
 * a reference nothing bound faults that context and no other. */
static void UnboundFaultsItsContext(CUdevice dev, CUcontext primary) {
  CUcontext ctx;
  CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
  CUmodule m;
  CHECK(cuModuleLoadData(&m, kModule));
  CUtexref ref;
  CHECK(cuModuleGetTexRef(&ref, m, "tex2d"));
  CHECK(cuModuleUnload(m));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuTexRefSetFilterMode(ref, CU_TR_FILTER_MODE_POINT));
  CHECK(cuModuleLoadData(&m, kModule));
  CUfunction old;
  CHECK(cuModuleGetFunction(&old, m, "old"));
  CUdeviceptr dout;
  CHECK(cuMemAlloc(&dout, 4));
  void* args[] = {&dout};
  CHECK(cuLaunchKernel(old, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
  EXPECT_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  CHECK(cuCtxDestroy(ctx));
  CHECK(cuCtxSetCurrent(primary));
  /* The first context still samples (from the array again: the pitched memory is freed). */
  CUtexref ref2d;
  CHECK(cuModuleGetTexRef(&ref2d, module, "tex2d"));
  CHECK(cuTexRefSetArray(ref2d, array2d, CU_TRSA_OVERRIDE_FORMAT));
  float coords[N][2] = {{0}}, out[N];
  for (int i = 0; i < N; ++i) {
    coords[i][0] = 0.5f;
    coords[i][1] = 0.5f;
  }
  Sample(coords, out);
  EXPECT_NEAR(out[0], grid[0][0]);
}

int main(void) {
  for (int y = 0; y < H; ++y) {
    for (int x = 0; x < W; ++x) grid[y][x] = 2.0f * x + 10.0f * y - 1.25f;
  }
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext primary;
  CHECK(cuDevicePrimaryCtxRetain(&primary, dev));
  CHECK(cuCtxSetCurrent(primary));
  char log[4096] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, (void*)(size_t)sizeof(log)};
  CUresult loaded = cuModuleLoadDataEx(&module, kModule, 2, options, values);
  if (loaded != CUDA_SUCCESS) {
    fprintf(stderr, "module load failed (%d): %s\n", (int)loaded, log);
    return 1;
  }
  Lookups();
  ArrayBinding();
  MemoryBindings();
  SurfaceBinding();
  UnboundFaultsItsContext(dev, primary);
  printf("texrefs_drv: ok\n");
  return 0;
}
