// Scalar arithmetic, conversions and math, checked against host references in corpus_test.cc.
#include <cuda_fp16.h>
#include <cstdint>

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Integer ops on per-thread inputs; out has 16 words per thread.
extern "C" __global__ void int_ops(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int a = in[2 * i], b = in[2 * i + 1];
  unsigned ua = a, ub = b;
  int* o = out + 16 * i;
  o[0] = b != 0 ? a / b : 0;
  o[1] = b != 0 ? a % b : 0;
  o[2] = ub != 0 ? ua / ub : 0;
  o[3] = ub != 0 ? ua % ub : 0;
  o[4] = min(a, b) + max(a, b) * 3;
  o[5] = abs(a) ^ (ua >> (b & 31));
  o[6] = a >> (b & 31);
  o[7] = __popc(ua) + __clz(ua) * 100;
  o[8] = __brev(ua);
  o[9] = __mulhi(a, b);
  o[10] = __umulhi(ua, ub);
  o[11] = (int)(((long long)a * b) >> 7);
  o[12] = __byte_perm(ua, ub, 0x5140);
  o[13] = __funnelshift_l(ua, ub, b & 63);
  o[14] = __ffs(a) + __sad(a, b, 5u);
  o[15] = (ua * 2654435761u) ^ (ua << 5) ^ ~ub;
}

extern "C" __global__ void int64_ops(const unsigned long long* in, unsigned long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long a = in[2 * i], b = in[2 * i + 1];
  unsigned long long* o = out + 8 * i;
  o[0] = a * b + (a >> 3);
  o[1] = b ? a / b : 0;
  o[2] = b ? a % b : 0;
  o[3] = __umul64hi(a, b);
  unsigned __int128 p = (unsigned __int128)a * b + a;
  o[4] = (unsigned long long)(p >> 64) ^ (unsigned long long)p;
  o[5] = __popcll(a) + __clzll(b);
  o[6] = (long long)a >> (b & 63);
  o[7] = __brevll(a);
}

// Float conversions with explicit rounding intrinsics: 16 words per input.
extern "C" __global__ void conversions(const float* in, const double* din, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float f = in[i];
  double d = din[i];
  int* o = out + 16 * i;
  o[0] = __float2int_rn(f);
  o[1] = __float2int_rz(f);
  o[2] = __float2int_rd(f);
  o[3] = __float2int_ru(f);
  o[4] = (int)__float2uint_rn(f);
  o[5] = __float_as_int(__int2float_rn(o[0] * 3 + 1));
  o[6] = __double2int_rn(d);
  o[7] = __float_as_int(__double2float_rn(d));
  o[8] = __float_as_int(__double2float_rz(d));
  o[9] = __float_as_int(__double2float_ru(d));
  o[10] = __float_as_int(__fadd_rz(f, 1.0e-8f));
  o[11] = __float_as_int(__fmul_ru(f, 1.1f));
  o[12] = __float_as_int(__fdiv_rd(f, 3.0f));
  o[13] = __float_as_int(rintf(f) + truncf(f) + floorf(f) + ceilf(f));
  o[14] = (int)(long long)(d * 1000.0);
  o[15] = __half_as_ushort(__float2half_rn(f)) | (__half_as_ushort(__float2half_rz(f)) << 16);
}

extern "C" __global__ void float_math(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float* o = out + 12 * i;
  o[0] = sqrtf(fabsf(x));
  o[1] = rsqrtf(fabsf(x) + 1.0f);
  o[2] = __expf(x * 0.1f);
  o[3] = __logf(fabsf(x) + 1.0f);
  o[4] = __sinf(x);
  o[5] = __cosf(x);
  o[6] = sinf(x);
  o[7] = expf(x * 0.1f);
  o[8] = tanhf(x * 0.3f);
  o[9] = x / (x * x + 1.0f);
  o[10] = fminf(x, 0.5f) + fmaxf(x, -0.5f) + copysignf(2.0f, x);
  o[11] = powf(fabsf(x) + 0.5f, 1.7f);
}

extern "C" __global__ void double_math(const double* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = in[i];
  double* o = out + 6 * i;
  o[0] = sqrt(fabs(x));
  o[1] = x / (x * x + 1.0);
  o[2] = fma(x, x, -1.0);
  o[3] = exp(x * 0.1);
  o[4] = sin(x);
  o[5] = isnan(x) ? 1.0 : (isinf(x) ? 2.0 : fmin(x, 3.0));
}

extern "C" __global__ void half_ops(const __half2* a, const __half2* b, __half2* out, float* fout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 x = a[i], y = b[i];
  out[3 * i] = __hadd2(x, y);
  out[3 * i + 1] = __hmul2(x, y);
  out[3 * i + 2] = __hfma2(x, y, x);
  fout[2 * i] = __low2float(x) + __high2float(y);
  fout[2 * i + 1] = __half2float(__hmax(__low2half(x), __high2half(y)));
}
