#include "host/fault_accounting.h"

#include <gtest/gtest.h>

#include <vector>

#include "transport/channel.h"

namespace pvgpu::host {
namespace {

constexpr uint64_t kUnknown = transport::Endpoint::kErrorCountUnknown;

class FaultAccountingTest : public ::testing::Test {
 protected:
  std::vector<uint64_t> published_;
  FaultAccounting faults_{7, [this](uint64_t count) { published_.push_back(count); }};
  ContextErrors errors_;
};

TEST_F(FaultAccountingTest, AFaultPoisonsTheContextAndTheFirstOneStays) {
  faults_.Record(errors_, Error(Code::kIllegalAddress, "load at 0x10"), "launch");
  faults_.Record(errors_, Error(Code::kLaunchFailed, "trap"), "launch");
  EXPECT_EQ(errors_.sticky, Code::kIllegalAddress);
  EXPECT_EQ(errors_.pending, Code::kOk);
  // A poisoned context reports its fault on every synchronization.
  EXPECT_EQ(errors_.TakeForSynchronize(), Code::kIllegalAddress);
  EXPECT_EQ(errors_.TakeForSynchronize(), Code::kIllegalAddress);
}

TEST_F(FaultAccountingTest, AnAsynchronousErrorIsReportedOnce) {
  faults_.Record(errors_, Error(Code::kInvalidValue, "copy outside allocations"), "copy");
  faults_.Record(errors_, Error(Code::kOutOfMemory, "later"), "copy");
  EXPECT_EQ(errors_.sticky, Code::kOk);
  EXPECT_EQ(errors_.TakeForSynchronize(), Code::kInvalidValue);  // the first one
  EXPECT_EQ(errors_.TakeForSynchronize(), Code::kOk);
}

TEST_F(FaultAccountingTest, AFaultAfterAPendingErrorStillPoisons) {
  faults_.Record(errors_, Error(Code::kInvalidValue, "copy"), "copy");
  faults_.Record(errors_, Error(Code::kMisalignedAddress, "store"), "launch");
  EXPECT_EQ(errors_.TakeForSynchronize(), Code::kMisalignedAddress);
}

TEST_F(FaultAccountingTest, EveryRecordPublishesTheCount) {
  ContextErrors other;
  faults_.Record(errors_, Error(Code::kInvalidValue, "a"), "copy");
  faults_.Record(other, Error(Code::kInvalidValue, "b"), "copy");
  EXPECT_EQ(published_, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(faults_.recorded(), 2u);
}

TEST_F(FaultAccountingTest, AsynchronousContextsMakeTheCountUnknown) {
  faults_.Record(errors_, Error(Code::kInvalidValue, "a"), "copy");
  faults_.SetAsynchronousContexts(1);
  faults_.Record(errors_, Error(Code::kInvalidValue, "b"), "copy");
  faults_.SetAsynchronousContexts(0);  // the count is trustworthy again, and complete
  EXPECT_EQ(published_, (std::vector<uint64_t>{1, kUnknown, kUnknown, 2}));
}

}  // namespace
}  // namespace pvgpu::host
