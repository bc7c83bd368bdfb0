/* The driver's error log (cuLogs*, CUDA 12.9): libcuda's warnings reach registered callbacks
 * and the log buffer whatever PVGPU_LOG prints (the test runs with PVGPU_LOG=error), read back
 * through an auto-advancing iterator into memory or a file; a callback unregistered hears
 * nothing more; bad arguments are CUDA_ERROR_INVALID_VALUE. The warnings come from calls pvgpu
 * does not implement, each logged once by name. */
#include "common.h"

struct Heard {
  int count;
  CUlogLevel level;
  char last[512];
  size_t length;
};

static void CUDA_CB OnLog(void* data, CUlogLevel level, char* message, size_t length) {
  struct Heard* heard = (struct Heard*)data;
  ++heard->count;
  heard->level = level;
  heard->length = length;
  snprintf(heard->last, sizeof(heard->last), "%s", message);
}

int main(void) {
  struct Heard heard = {0};
  CUlogsCallbackHandle handle = NULL;
  CUlogIterator start = 1234;
  /* Before cuInit, as a program sets logging up first. */
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLogsRegisterCallback(NULL, &heard, &handle));
  CHECK(cuLogsRegisterCallback(OnLog, &heard, &handle));
  EXPECT_TRUE(handle != NULL);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLogsCurrent(&start, 1));
  CHECK(cuLogsCurrent(&start, 0));

  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuDeviceGetNvSciSyncAttributes(NULL, device, 0));
  EXPECT_TRUE(heard.count == 1);
  EXPECT_TRUE(heard.level == CU_LOG_LEVEL_WARNING);
  EXPECT_TRUE(strstr(heard.last, "cuDeviceGetNvSciSyncAttributes") != NULL);
  EXPECT_TRUE(heard.length == strlen(heard.last));

  /* From the iterator: that message and a newline, NUL-terminated; then nothing new. */
  char buffer[4096];
  size_t size = sizeof(buffer);
  CUlogIterator it = start;
  CHECK(cuLogsDumpToMemory(&it, buffer, &size, 0));
  EXPECT_TRUE(size == strlen(buffer));
  EXPECT_TRUE(strstr(buffer, "cuDeviceGetNvSciSyncAttributes") != NULL);
  EXPECT_TRUE(buffer[size - 1] == '\n');
  EXPECT_TRUE(it != start);
  size = sizeof(buffer);
  CHECK(cuLogsDumpToMemory(&it, buffer, &size, 0));
  EXPECT_TRUE(size == 0);
  /* A buffer too small for the newest message. */
  it = start;
  size = 8;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLogsDumpToMemory(&it, buffer, &size, 0));
  EXPECT_TRUE(size == 0);
  size = sizeof(buffer);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLogsDumpToMemory(&it, buffer, &size, 2));

  /* Unregistered: the next warning is logged but not heard. Everything since the start goes to
   * a file. */
  CHECK(cuLogsUnregisterCallback(handle));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLogsUnregisterCallback(handle));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, cuDeviceGetDevResource(device, NULL, 0));
  EXPECT_TRUE(heard.count == 1);
  char path[] = "/tmp/pvgpu-logs-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_TRUE(fd >= 0);
  close(fd);
  it = start;
  CHECK(cuLogsDumpToFile(&it, path, 0));
  char* text = ReadFileBytes(path, NULL);
  EXPECT_TRUE(strstr(text, "cuDeviceGetNvSciSyncAttributes") != NULL);
  EXPECT_TRUE(strstr(text, "cuDeviceGetDevResource") != NULL);
  free(text);
  unlink(path);
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuLogsDumpToFile(NULL, "/nonexistent/dir/log", 0));
  /* NULL: every message kept. */
  size = sizeof(buffer);
  CHECK(cuLogsDumpToMemory(NULL, buffer, &size, 0));
  EXPECT_TRUE(strstr(buffer, "cuDeviceGetDevResource") != NULL);
  printf("driver log: callbacks, iterators, memory and file dumps: ok\n");
  return 0;
}
