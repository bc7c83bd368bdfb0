// Fixture for the nvcc-compiled corpus: each test runs once per compute target.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "ptx/test_util.h"

namespace pvgpu::ptx {

class CorpusTest : public ::testing::TestWithParam<int> {
 protected:
  testing::Runner& Load(const std::string& name) {
    std::string path = std::string(PVGPU_PTX_CORPUS_DIR) + "/" + name + "_sm" +
                       std::to_string(GetParam()) + ".ptx";
    std::string text = testing::Runner::ReadFile(path);
    EXPECT_FALSE(text.empty()) << path;
    runner_ = std::make_unique<testing::Runner>(text);
    EXPECT_TRUE(runner_->ok()) << runner_->load_status().ToString();
    return *runner_;
  }
  std::unique_ptr<testing::Runner> runner_;
  std::mt19937 rng_{12345};
};

#define PVGPU_CORPUS_INSTANTIATE(suite)                            \
  INSTANTIATE_TEST_SUITE_P(Arch, suite, ::testing::Values(75, 90), \
                           [](const auto& info) { return "sm" + std::to_string(info.param); })

}  // namespace pvgpu::ptx
