/* Stream memory operations: cuStreamWriteValue32/64, cuStreamWaitValue32/64 in every
 * condition (GEQ with wraparound, EQ, AND, NOR), cuStreamBatchMemOp, the device attributes
 * that announce them, a wait that holds a stream until the program's host code writes pinned
 * memory, and the errors CUDA defines. Every value is checked against what a CPU computes. */
#include "common.h"

#include <stdint.h>

static uint32_t Read32(CUdeviceptr p) {
  uint32_t v = 0;
  CHECK(cuMemcpyDtoH(&v, p, 4));
  return v;
}

static uint64_t Read64(CUdeviceptr p) {
  uint64_t v = 0;
  CHECK(cuMemcpyDtoH(&v, p, 8));
  return v;
}

/* What CUDA says each condition means, for the reference. */
static int Satisfied32(uint32_t current, uint32_t value, unsigned condition) {
  switch (condition) {
    case CU_STREAM_WAIT_VALUE_GEQ: return (int32_t)(current - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return current == value;
    case CU_STREAM_WAIT_VALUE_AND: return (current & value) != 0;
    default: return ~(current | value) != 0;
  }
}

int main(void) {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  const CUdevice_attribute attrs[] = {
      CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
      CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
      CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR};
  for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); ++i) {
    int v = 0;
    CHECK(cuDeviceGetAttribute(&v, attrs[i], device));
    EXPECT_TRUE(v == 1);
  }
  int flush = -1;
  CHECK(cuDeviceGetAttribute(&flush, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, device));
  EXPECT_TRUE(flush == 0);

  CUcontext context;
  CHECK(cuCtxCreate(&context, NULL, 0, device));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, 0));
  CUdeviceptr mem;
  CHECK(cuMemAlloc(&mem, 64));
  CHECK(cuMemsetD8(mem, 0, 64));
  const CUdeviceptr flag = mem, wide = mem + 8, marker = mem + 16;

  /* Writes, in stream order with the copies around them. */
  CHECK(cuStreamWriteValue32(stream, flag, 7, 0));
  CHECK(cuStreamWriteValue64(stream, wide, 0x123456789abcdef0ull, 0));
  CHECK(cuStreamWriteValue32(stream, marker, 1, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(Read32(flag) == 7);
  EXPECT_TRUE(Read64(wide) == 0x123456789abcdef0ull);
  EXPECT_TRUE(Read32(marker) == 1);

  /* Every condition with a value that satisfies it (the CPU reference agrees), each wait
   * followed by a write that runs only after it. */
  const struct {
    unsigned condition;
    uint32_t value;
  } waits[] = {{CU_STREAM_WAIT_VALUE_GEQ, 5},          {CU_STREAM_WAIT_VALUE_GEQ, 7},
               {CU_STREAM_WAIT_VALUE_GEQ, 0xfffffff0u}, /* 7 - (-16) wraps to >= 0 */
               {CU_STREAM_WAIT_VALUE_EQ, 7},           {CU_STREAM_WAIT_VALUE_AND, 4},
               {CU_STREAM_WAIT_VALUE_NOR, 0xfffffff0u}};
  for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); ++i) {
    EXPECT_TRUE(Satisfied32(7, waits[i].value, waits[i].condition));
    CHECK(cuStreamWaitValue32(stream, flag, waits[i].value, waits[i].condition));
    CHECK(cuStreamWriteValue32(stream, marker, 100 + (uint32_t)i, 0));
    CHECK(cuStreamSynchronize(stream));
    EXPECT_TRUE(Read32(marker) == 100 + (uint32_t)i);
  }
  CHECK(cuStreamWaitValue64(stream, wide, 0x123456789abcdef0ull, CU_STREAM_WAIT_VALUE_EQ));
  CHECK(cuStreamWaitValue64(stream, wide, 0x1000000000000000ull, CU_STREAM_WAIT_VALUE_GEQ));
  CHECK(cuStreamWriteValue64(stream, wide, 42, 0));
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(Read64(wide) == 42);

  /* A batch: writes and a wait in order. */
  CUstreamBatchMemOpParams ops[4];
  memset(ops, 0, sizeof(ops));
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = flag;
  ops[0].writeValue.value = 9;
  ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[1].waitValue.address = flag;
  ops[1].waitValue.value = 9;
  ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[2].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[2].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
  ops[3].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[3].writeValue.address = wide;
  ops[3].writeValue.value64 = 0xfeedfacecafebeefull;
  CHECK(cuStreamBatchMemOp(stream, 4, ops, 0));
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(Read32(flag) == 9);
  EXPECT_TRUE(Read64(wide) == 0xfeedfacecafebeefull);

  /* A wait the program's own host code satisfies later, through mapped pinned memory. */
  volatile uint32_t* host_flag = NULL;
  CHECK(cuMemHostAlloc((void**)&host_flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  host_flag[0] = 0;
  CUdeviceptr host_flag_dev = 0;
  CHECK(cuMemHostGetDevicePointer(&host_flag_dev, (void*)host_flag, 0));
  CHECK(cuStreamWaitValue32(stream, host_flag_dev, 1, CU_STREAM_WAIT_VALUE_GEQ));
  CHECK(cuStreamWriteValue32(stream, marker, 555, 0));
  usleep(200 * 1000);
  EXPECT_RESULT(CUDA_ERROR_NOT_READY, cuStreamQuery(stream));
  __atomic_store_n(&host_flag[0], 1, __ATOMIC_RELEASE);
  CHECK(cuStreamSynchronize(stream));
  EXPECT_TRUE(Read32(marker) == 555);

  /* Errors at the call. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(stream, flag + 2, 1, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue64(stream, flag + 4, 1, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(stream, flag, 1, 0x80));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(stream, flag, 1, 0x7));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(stream, flag + 1, 1, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(stream, mem + 4096, 1, 0));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                cuStreamWaitValue32(stream, flag, 1, CU_STREAM_WAIT_VALUE_FLUSH));
  ops[0].operation = (CUstreamBatchMemOpType)77;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(stream, 1, ops, 0));
  CHECK(cuStreamSynchronize(stream));

  CHECK(cuMemFreeHost((void*)host_flag));
  CHECK(cuMemFree(mem));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuCtxDestroy(context));
  printf("stream_memops: writes, waits in every condition, batches and a host-released wait correct\n");
  return 0;
}
