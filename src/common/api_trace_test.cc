#include "common/api_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/log.h"

namespace pvgpu::log {
namespace {

enum Color { kRed = 3 };
enum class Shape : unsigned char { kSquare = 7 };
void Callback() {}

class CallTraceTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/pvgpu-api-trace-XXXXXX";
    const int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = name;
    setenv("PVGPU_LOG", "trace", 1);
    setenv("PVGPU_LOG_FILE", path_.c_str(), 1);
    Init("api-trace-test", Level::kWarn);
  }
  void TearDown() override {
    unsetenv("PVGPU_LOG_FILE");
    unsetenv("PVGPU_LOG");
    unlink(path_.c_str());
  }
  // The message of the log's last line, a trace line: "[component pid time T] message".
  std::string LastLine() const {
    std::ifstream in(path_);
    std::string line, last;
    while (std::getline(in, line)) last = line;
    const size_t start = last.find(" T] ");
    return start == std::string::npos ? "" : last.substr(start + 4);
  }
  std::string path_;
};

TEST_F(CallTraceTest, FormatsEachKindOfArgument) {
  int out = 0;
  CallTrace("cuThing_v2")
      .Value(&out)
      .Hex(0xdead0000)
      .Text("name")
      .Text(nullptr)
      .Value(static_cast<unsigned char>(65))
      .Value(kRed)
      .Value(Shape::kSquare)
      .Value(size_t{4096})
      .Value(-2)
      .Value(static_cast<const void*>(nullptr))
      .Result("CUDA_SUCCESS");
  std::ostringstream address;
  address << static_cast<const void*>(&out);
  EXPECT_EQ(LastLine(),
            "cuThing_v2(" + address.str() +
                ", 0xdead0000, \"name\", (null), 65, 3, 7, 4096, -2, 0) -> CUDA_SUCCESS");
}

TEST_F(CallTraceTest, NoArgumentsAndFunctionPointers) {
  CallTrace("cuCtxSynchronize").Result("CUDA_ERROR_INVALID_CONTEXT");
  EXPECT_EQ(LastLine(), "cuCtxSynchronize() -> CUDA_ERROR_INVALID_CONTEXT");
  CallTrace("cuLaunchHostFunc").Value(&Callback).Result("CUDA_SUCCESS");
  std::ostringstream address;
  address << reinterpret_cast<const void*>(&Callback);
  EXPECT_EQ(LastLine(), "cuLaunchHostFunc(" + address.str() + ") -> CUDA_SUCCESS");
}

}  // namespace
}  // namespace pvgpu::log
