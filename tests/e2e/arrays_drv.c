/* CUDA arrays: creation, descriptors, mipmapped levels, and every copy to, from and between
 * them (1D, 2D, 3D, synchronous and asynchronous), each checked byte for byte against what the
 * test wrote; copies outside an array are refused. */
#include "common.h"

static void Fill(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(i * 31u + seed * 7u + (i >> 8));
}

static void Arrays2D(void) {
  /* A 2D array of 37 x 11 float2 elements, filled from pitched host rows. */
  CUDA_ARRAY_DESCRIPTOR d = {0};
  d.Width = 37;
  d.Height = 11;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 2;
  CUarray a;
  CHECK(cuArrayCreate(&a, &d));
  CUDA_ARRAY_DESCRIPTOR got;
  CHECK(cuArrayGetDescriptor(&got, a));
  EXPECT_TRUE(got.Width == 37 && got.Height == 11 && got.Format == CU_AD_FORMAT_FLOAT &&
              got.NumChannels == 2);
  const size_t row = 37 * 8, host_pitch = row + 24;
  unsigned char* src = malloc(host_pitch * 11);
  unsigned char* back = calloc(host_pitch * 11, 1);
  Fill(src, host_pitch * 11, 1);
  CUDA_MEMCPY2D c = {0};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = host_pitch;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = row;
  c.Height = 11;
  CHECK(cuMemcpy2D(&c));
  CUDA_MEMCPY2D r = {0};
  r.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  r.srcArray = a;
  r.dstMemoryType = CU_MEMORYTYPE_HOST;
  r.dstHost = back;
  r.dstPitch = host_pitch;
  r.WidthInBytes = row;
  r.Height = 11;
  CHECK(cuMemcpy2D(&r));
  for (size_t y = 0; y < 11; ++y) EXPECT_TRUE(memcmp(src + y * host_pitch, back + y * host_pitch, row) == 0);

  /* A sub-rectangle (x 3..9 elements, rows 2..6) read back asynchronously. */
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned char sub[7 * 8 * 5];
  memset(sub, 0, sizeof(sub));
  CUDA_MEMCPY2D q = {0};
  q.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  q.srcArray = a;
  q.srcXInBytes = 3 * 8;
  q.srcY = 2;
  q.dstMemoryType = CU_MEMORYTYPE_HOST;
  q.dstHost = sub;
  q.dstPitch = 7 * 8;
  q.WidthInBytes = 7 * 8;
  q.Height = 5;
  CHECK(cuMemcpy2DAsync(&q, s));
  CHECK(cuStreamSynchronize(s));
  for (size_t y = 0; y < 5; ++y) {
    EXPECT_TRUE(memcmp(sub + y * 56, src + (y + 2) * host_pitch + 24, 56) == 0);
  }

  /* Array to device memory and device to array (pitched, through cuMemcpy2D). */
  CUdeviceptr dev;
  size_t dev_pitch;
  CHECK(cuMemAllocPitch(&dev, &dev_pitch, row, 11, 4));
  CUDA_MEMCPY2D ad = {0};
  ad.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  ad.srcArray = a;
  ad.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  ad.dstDevice = dev;
  ad.dstPitch = dev_pitch;
  ad.WidthInBytes = row;
  ad.Height = 11;
  CHECK(cuMemcpy2D(&ad));
  CUarray b;
  CHECK(cuArrayCreate(&b, &d));
  CUDA_MEMCPY2D da = {0};
  da.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  da.srcDevice = dev;
  da.srcPitch = dev_pitch;
  da.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  da.dstArray = b;
  da.WidthInBytes = row;
  da.Height = 11;
  CHECK(cuMemcpy2DUnaligned(&da));
  memset(back, 0, host_pitch * 11);
  r.srcArray = b;
  CHECK(cuMemcpy2D(&r));
  for (size_t y = 0; y < 11; ++y) EXPECT_TRUE(memcmp(src + y * host_pitch, back + y * host_pitch, row) == 0);

  /* Array to array, 1D forms: the array as one run of bytes, rows after each other. */
  CUarray c2;
  CHECK(cuArrayCreate(&c2, &d));
  CHECK(cuMemcpyAtoA(c2, 16, a, 8, row * 11 - 16));
  unsigned char* linear = malloc(row * 11);
  CHECK(cuMemcpyAtoH(linear, c2, 0, row * 11));
  for (size_t y = 0; y < 11; ++y) {
    for (size_t x = 0; x < row; ++x) {
      const size_t i = y * row + x;
      if (i < 16) continue;
      const size_t from = i - 8;
      EXPECT_TRUE(linear[i] == src[(from / row) * host_pitch + from % row]);
    }
  }
  /* HtoA / AtoD / DtoA / async forms. */
  unsigned char bytes[300], check[300];
  Fill(bytes, sizeof(bytes), 5);
  CHECK(cuMemcpyHtoA(c2, 100, bytes, sizeof(bytes)));
  CHECK(cuMemcpyAtoD(dev, c2, 100, sizeof(bytes)));
  CHECK(cuMemcpyDtoA(b, 7, dev, sizeof(bytes)));
  CHECK(cuMemcpyAtoHAsync(check, b, 7, sizeof(bytes), s));
  CHECK(cuStreamSynchronize(s));
  EXPECT_TRUE(memcmp(bytes, check, sizeof(bytes)) == 0);
  Fill(bytes, sizeof(bytes), 9);
  CHECK(cuMemcpyHtoAAsync(b, 0, bytes, sizeof(bytes), s));
  CHECK(cuStreamSynchronize(s));
  CHECK(cuMemcpyAtoH(check, b, 0, sizeof(bytes)));
  EXPECT_TRUE(memcmp(bytes, check, sizeof(bytes)) == 0);

  /* Outside the array: refused, nothing copied. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyAtoH(check, b, row * 11 - 10, 11));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoA(b, row * 11, bytes, 1));
  q.srcXInBytes = row - 8;  /* 7 elements from the last one */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&q));
  q.srcXInBytes = 0;
  q.srcY = 7; /* 5 rows from row 7 of 11 */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&q));

  CHECK(cuArrayDestroy(a));
  CHECK(cuArrayDestroy(b));
  CHECK(cuArrayDestroy(c2));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuArrayDestroy(a));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuMemcpyAtoH(check, a, 0, 1));
  CHECK(cuMemFree(dev));
  CHECK(cuStreamDestroy(s));
  free(src);
  free(back);
  free(linear);
}

static void Arrays3D(void) {
  /* 3D: 9 x 5 x 4 elements of 2 x u16, copied in and out in one cuMemcpy3D each way, then a
   * box in the middle. */
  CUDA_ARRAY3D_DESCRIPTOR d = {0};
  d.Width = 9;
  d.Height = 5;
  d.Depth = 4;
  d.Format = CU_AD_FORMAT_UNSIGNED_INT16;
  d.NumChannels = 2;
  CUarray a;
  CHECK(cuArray3DCreate(&a, &d));
  CUDA_ARRAY3D_DESCRIPTOR got;
  CHECK(cuArray3DGetDescriptor(&got, a));
  EXPECT_TRUE(got.Width == 9 && got.Height == 5 && got.Depth == 4 && got.NumChannels == 2 &&
              got.Format == CU_AD_FORMAT_UNSIGNED_INT16 && got.Flags == 0);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req;
  CUdevice dev0;
  CHECK(cuDeviceGet(&dev0, 0));
  CHECK(cuArrayGetMemoryRequirements(&req, a, dev0));
  EXPECT_TRUE(req.size >= 9 * 5 * 4 * 4 && req.alignment > 0);
  CUarray plane;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuArrayGetPlane(&plane, a, 0));
  const size_t row = 9 * 4, pitch = 40, rows = 6;  /* host slices 6 rows of 40 bytes */
  unsigned char* src = malloc(pitch * rows * 4);
  unsigned char* back = calloc(pitch * rows * 4, 1);
  Fill(src, pitch * rows * 4, 3);
  CUDA_MEMCPY3D c = {0};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = pitch;
  c.srcHeight = rows;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = row;
  c.Height = 5;
  c.Depth = 4;
  CHECK(cuMemcpy3D(&c));
  CUDA_MEMCPY3D r = {0};
  r.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  r.srcArray = a;
  r.dstMemoryType = CU_MEMORYTYPE_HOST;
  r.dstHost = back;
  r.dstPitch = pitch;
  r.dstHeight = rows;
  r.WidthInBytes = row;
  r.Height = 5;
  r.Depth = 4;
  CHECK(cuMemcpy3D(&r));
  for (size_t z = 0; z < 4; ++z) {
    for (size_t y = 0; y < 5; ++y) {
      const size_t o = z * pitch * rows + y * pitch;
      EXPECT_TRUE(memcmp(src + o, back + o, row) == 0);
    }
  }
  /* A 3 x 2 x 2 box at (2, 1, 1), through device memory and back with the async forms. */
  CUdeviceptr box;
  CHECK(cuMemAlloc(&box, 12 * 2 * 2));
  CUDA_MEMCPY3D ab = {0};
  ab.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  ab.srcArray = a;
  ab.srcXInBytes = 2 * 4;
  ab.srcY = 1;
  ab.srcZ = 1;
  ab.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  ab.dstDevice = box;
  ab.dstPitch = 12;
  ab.dstHeight = 2;
  ab.WidthInBytes = 12;
  ab.Height = 2;
  ab.Depth = 2;
  CHECK(cuMemcpy3DAsync(&ab, 0));
  unsigned char got_box[48];
  CHECK(cuMemcpyDtoH(got_box, box, sizeof(got_box)));
  for (size_t z = 0; z < 2; ++z) {
    for (size_t y = 0; y < 2; ++y) {
      EXPECT_TRUE(memcmp(got_box + z * 24 + y * 12,
                         src + (z + 1) * pitch * rows + (y + 1) * pitch + 8, 12) == 0);
    }
  }
  /* The same box through the peer form (one context: both sides name it). */
  CUcontext ctx;
  CHECK(cuCtxGetCurrent(&ctx));
  CUDA_MEMCPY3D_PEER p = {0};
  p.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  p.srcArray = a;
  p.srcXInBytes = 8;
  p.srcY = 1;
  p.srcZ = 1;
  p.srcContext = ctx;
  p.dstMemoryType = CU_MEMORYTYPE_HOST;
  p.dstHost = got_box;
  p.dstPitch = 12;
  p.dstHeight = 2;
  p.dstContext = ctx;
  p.WidthInBytes = 12;
  p.Height = 2;
  p.Depth = 2;
  memset(got_box, 0, sizeof(got_box));
  CHECK(cuMemcpy3DPeer(&p));
  for (size_t z = 0; z < 2; ++z) {
    for (size_t y = 0; y < 2; ++y) {
      EXPECT_TRUE(memcmp(got_box + z * 24 + y * 12,
                         src + (z + 1) * pitch * rows + (y + 1) * pitch + 8, 12) == 0);
    }
  }
  ab.srcZ = 3; /* 2 slices from slice 3 of 4 */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&ab));
  CHECK(cuArrayDestroy(a));
  CHECK(cuMemFree(box));
  free(src);
  free(back);
}

static void Layered(void) {
  /* A layered 2D array and a cubemap: layers (faces) are the third coordinate of copies. */
  CUDA_ARRAY3D_DESCRIPTOR d = {0};
  d.Width = 8;
  d.Height = 8;
  d.Depth = 6;
  d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  d.NumChannels = 4;
  d.Flags = CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_SURFACE_LDST;
  CUarray cube;
  CHECK(cuArray3DCreate(&cube, &d));
  d.Flags = CUDA_ARRAY3D_LAYERED;
  d.Depth = 3;
  d.Height = 0; /* a layered 1D array */
  CUarray layered;
  CHECK(cuArray3DCreate(&layered, &d));
  CUDA_ARRAY3D_DESCRIPTOR got;
  CHECK(cuArray3DGetDescriptor(&got, layered));
  EXPECT_TRUE(got.Width == 8 && got.Height == 0 && got.Depth == 3 &&
              got.Flags == CUDA_ARRAY3D_LAYERED);
  unsigned char face[8 * 8 * 4], back[8 * 8 * 4];
  Fill(face, sizeof(face), 11);
  CUDA_MEMCPY3D c = {0};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = face;
  c.srcPitch = 32;
  c.srcHeight = 8;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = cube;
  c.dstZ = 4;
  c.WidthInBytes = 32;
  c.Height = 8;
  c.Depth = 1;
  CHECK(cuMemcpy3D(&c));
  /* Face 4 is bytes [4 * 256, 5 * 256) of the cubemap. */
  CHECK(cuMemcpyAtoH(back, cube, 4 * 256, 256));
  EXPECT_TRUE(memcmp(face, back, 256) == 0);
  c.dstZ = 6;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c));
  /* Bad descriptors. */
  d.Flags = CUDA_ARRAY3D_CUBEMAP;
  d.Height = 8;
  d.Width = 4; /* not square */
  d.Depth = 6;
  CUarray bad;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuArray3DCreate(&bad, &d));
  d.Width = 8;
  d.NumChannels = 3;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuArray3DCreate(&bad, &d));
  d.NumChannels = 4;
  d.Format = CU_AD_FORMAT_NV12;
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuArray3DCreate(&bad, &d));
  CHECK(cuArrayDestroy(cube));
  CHECK(cuArrayDestroy(layered));
}

static void Mipmapped(void) {
  CUDA_ARRAY3D_DESCRIPTOR d = {0};
  d.Width = 16;
  d.Height = 8;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  CUmipmappedArray m;
  CHECK(cuMipmappedArrayCreate(&m, &d, 5));
  CUarray levels[5];
  for (unsigned l = 0; l < 5; ++l) {
    CHECK(cuMipmappedArrayGetLevel(&levels[l], m, l));
    CUDA_ARRAY3D_DESCRIPTOR got;
    CHECK(cuArray3DGetDescriptor(&got, levels[l]));
    const size_t w = 16 >> l ? 16 >> l : 1, h = 8 >> l ? 8 >> l : 1;
    EXPECT_TRUE(got.Width == w && got.Height == h);
    /* Each level holds its own values. */
    float v[128];
    for (size_t i = 0; i < w * h; ++i) v[i] = (float)(l * 1000 + i);
    CHECK(cuMemcpyHtoA(levels[l], 0, v, w * h * 4));
  }
  for (unsigned l = 0; l < 5; ++l) {
    const size_t w = 16 >> l ? 16 >> l : 1, h = 8 >> l ? 8 >> l : 1;
    float v[128];
    CHECK(cuMemcpyAtoH(v, levels[l], 0, w * h * 4));
    for (size_t i = 0; i < w * h; ++i) EXPECT_TRUE(v[i] == (float)(l * 1000 + i));
  }
  CUarray extra;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMipmappedArrayGetLevel(&extra, m, 5));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuArrayDestroy(levels[1]));  /* the mipmap's */
  CUmipmappedArray too_many;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMipmappedArrayCreate(&too_many, &d, 6));
  CUDA_ARRAY_MEMORY_REQUIREMENTS req;
  CUdevice dev0;
  CHECK(cuDeviceGet(&dev0, 0));
  CHECK(cuMipmappedArrayGetMemoryRequirements(&req, m, dev0));
  EXPECT_TRUE(req.size >= (128 + 32 + 8 + 2 + 1) * 4);
  CHECK(cuMipmappedArrayDestroy(m));
  EXPECT_RESULT(CUDA_ERROR_INVALID_HANDLE, cuArray3DGetDescriptor(&d, levels[0]));
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  Arrays2D();
  Arrays3D();
  Layered();
  Mipmapped();
  /* A context's arrays go with it; its handles name nothing afterwards. */
  CUcontext other;
  CHECK(cuCtxCreate(&other, NULL, 0, dev));
  CUDA_ARRAY_DESCRIPTOR d = {16, 4, CU_AD_FORMAT_SIGNED_INT32, 1};
  CUarray a;
  CHECK(cuArrayCreate(&a, &d));
  CHECK(cuCtxDestroy(other));
  CUDA_ARRAY_DESCRIPTOR got;
  EXPECT_RESULT(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuArrayGetDescriptor(&got, a));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  printf("arrays_drv: ok\n");
  return 0;
}
