// Device printf: every thread prints a line with integers, floats, a string and a pointer-sized
// value. The program captures its own stdout while the kernel runs and checks every line
// arrived, exactly once, as the C library would have formatted it on the host.
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime_check.h"

__global__ void Hello(int base) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  printf("thread %d of block %d: %d %.2f %s %llx\n", threadIdx.x, blockIdx.x, base + i, i * 0.25f,
         i % 2 ? "odd" : "even", 0x100000000ull + i);
}

int main() {
  const int blocks = 2, threads = 8, base = 40;
  std::fflush(stdout);
  char path[] = "/tmp/pvgpu_printf_XXXXXX";
  const int capture = mkstemp(path);
  EXPECT_TRUE(capture >= 0);
  const int saved = dup(STDOUT_FILENO);
  EXPECT_TRUE(dup2(capture, STDOUT_FILENO) == STDOUT_FILENO);
  Hello<<<blocks, threads>>>(base);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t synchronized = cudaDeviceSynchronize();  // printf output is flushed here
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  CHECK(launched);
  CHECK(synchronized);

  std::string output;
  char buffer[4096];
  lseek(capture, 0, SEEK_SET);
  for (ssize_t n; (n = read(capture, buffer, sizeof(buffer))) > 0;) output.append(buffer, n);
  close(capture);
  unlink(path);
  std::fputs(output.c_str(), stdout);

  std::vector<std::string> want;
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) {
      const int i = b * threads + t;
      char line[256];
      std::snprintf(line, sizeof(line), "thread %d of block %d: %d %.2f %s %llx\n", t, b, base + i,
                    i * 0.25f, i % 2 ? "odd" : "even", 0x100000000ull + i);
      want.push_back(line);
    }
  }
  std::vector<std::string> got;
  for (size_t at = 0; at < output.size();) {
    const size_t end = output.find('\n', at);
    if (end == std::string::npos) break;
    got.push_back(output.substr(at, end + 1 - at));
    at = end + 1;
  }
  // Blocks may print in any order; each line must appear exactly once.
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  if (got != want) {
    std::fprintf(stderr, "device printf printed %zu lines, expected %zu:\n%s", got.size(),
                 want.size(), output.c_str());
    return 1;
  }
  std::printf("device printf: %zu lines, ok\n", got.size());
  return 0;
}
