#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace pvgpu {
namespace {

TEST(StatusTest, DefaultIsOk) {
  const Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), Code::kOk);
  EXPECT_EQ(status.message(), "");
  EXPECT_EQ(status.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(StatusTest, ErrorCarriesItsCodeAndMessage) {
  const Status status = Error(Code::kInvalidValue, "size is zero");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Code::kInvalidValue);
  EXPECT_EQ(status.message(), "size is zero");
  EXPECT_EQ(status.ToString(), "InvalidValue: size is zero");
  EXPECT_EQ(Error(Code::kOutOfMemory, "").ToString(), "OutOfMemory");
}

TEST(StatusTest, WithContextPrefixesErrorsOnly) {
  const Status inner = Error(Code::kInvalidPtx, "line 3: unknown opcode");
  const Status outer = inner.WithContext("loading module").WithContext("kernel add");
  EXPECT_EQ(outer.code(), Code::kInvalidPtx);
  EXPECT_EQ(outer.message(), "kernel add: loading module: line 3: unknown opcode");
  EXPECT_TRUE(Status::Ok().WithContext("ignored").ok());
  EXPECT_EQ(Status::Ok().WithContext("ignored").message(), "");
}

TEST(StatusTest, CodeNamesDropTheLeadingK) {
  EXPECT_STREQ(CodeName(Code::kOk), "Ok");
  EXPECT_STREQ(CodeName(Code::kIllegalAddress), "IllegalAddress");
  EXPECT_STREQ(CodeName(Code::kDeviceUnavailable), "DeviceUnavailable");
  EXPECT_STREQ(CodeName(static_cast<Code>(12345)), "Unknown");
}

// The codes keep cuda.h's values: they cross the wire and become CUresults unchanged.
TEST(StatusTest, CodesAreCudaResultValues) {
  EXPECT_EQ(static_cast<int>(Code::kOutOfMemory), 2);
  EXPECT_EQ(static_cast<int>(Code::kInvalidHandle), 400);
  EXPECT_EQ(static_cast<int>(Code::kIllegalAddress), 700);
  EXPECT_EQ(static_cast<int>(Code::kNotSupported), 801);
}

TEST(StatusTest, KernelFaultsAreStickyOtherErrorsAreNot) {
  for (Code sticky : {Code::kIllegalAddress, Code::kMisalignedAddress, Code::kLaunchFailed,
                      Code::kAssert, Code::kIllegalInstruction, Code::kLaunchTimeout}) {
    EXPECT_TRUE(IsStickyError(sticky)) << CodeName(sticky);
  }
  for (Code plain : {Code::kOk, Code::kInvalidValue, Code::kOutOfMemory, Code::kInvalidHandle,
                     Code::kNotReady, Code::kNotSupported, Code::kLaunchOutOfResources,
                     Code::kCooperativeLaunchTooLarge}) {
    EXPECT_FALSE(IsStickyError(plain)) << CodeName(plain);
  }
}

TEST(StatusOrTest, HoldsAValue) {
  StatusOr<std::string> value = std::string("ptx");
  ASSERT_TRUE(value.ok());
  EXPECT_TRUE(value.status().ok());
  EXPECT_EQ(*value, "ptx");
  EXPECT_EQ(value->size(), 3u);
  value.value() += "as";
  EXPECT_EQ(value.value(), "ptxas");
}

TEST(StatusOrTest, HoldsAnError) {
  const StatusOr<int> value = Error(Code::kNotFound, "no such kernel");
  EXPECT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), Code::kNotFound);
  EXPECT_EQ(value.status().message(), "no such kernel");
}

TEST(StatusOrTest, MovesOutMoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> value = std::make_unique<int>(7);
  ASSERT_TRUE(value.ok());
  std::unique_ptr<int> taken = std::move(value).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 7);
}

Status Step(bool fail, std::vector<std::string>* trace, const char* name) {
  trace->push_back(name);
  return fail ? Error(Code::kInvalidValue, name) : Status::Ok();
}

Status TwoSteps(bool fail_first, std::vector<std::string>* trace) {
  PVGPU_TRY(Step(fail_first, trace, "first"));
  PVGPU_TRY(Step(false, trace, "second"));
  return Status::Ok();
}

TEST(StatusMacrosTest, TryReturnsTheFirstErrorAndStopsThere) {
  std::vector<std::string> trace;
  const Status failed = TwoSteps(true, &trace);
  EXPECT_EQ(failed.code(), Code::kInvalidValue);
  EXPECT_EQ(failed.message(), "first");
  EXPECT_EQ(trace, std::vector<std::string>{"first"});

  trace.clear();
  EXPECT_TRUE(TwoSteps(false, &trace).ok());
  EXPECT_EQ(trace, (std::vector<std::string>{"first", "second"}));
}

StatusOr<int> Parse(const std::string& text) {
  if (text.empty()) return Error(Code::kInvalidValue, "empty");
  return static_cast<int>(text.size());
}

StatusOr<int> SumOfLengths(const std::string& a, const std::string& b) {
  PVGPU_ASSIGN_OR_RETURN(int first, Parse(a));
  PVGPU_ASSIGN_OR_RETURN(const int second, Parse(b));  // two on one function: distinct temps
  return first + second;
}

TEST(StatusMacrosTest, AssignOrReturnBindsTheValueOrReturnsTheError) {
  const StatusOr<int> sum = SumOfLengths("ab", "cde");
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, 5);
  const StatusOr<int> failed = SumOfLengths("ab", "");
  EXPECT_EQ(failed.status().code(), Code::kInvalidValue);
  EXPECT_EQ(failed.status().message(), "empty");
}

}  // namespace
}  // namespace pvgpu
