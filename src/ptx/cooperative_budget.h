// What cooperative launches hold resident, bounded for the whole process. Each block of a
// cooperative launch keeps its registers, local and shared memory for the whole launch
// (executor.cc), so the bound per launch (kMaxCooperativeResidentBytes) is not enough: many
// sessions each launching the largest grid at once must not exhaust the host. A launch that does
// not fit beside those running waits for them to end, as a launch on a GPU waits for busy
// multiprocessors, and gives up if it is cancelled meanwhile.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/status.h"

namespace pvgpu::ptx {

// Waits until `bytes` more fit in the budget, then takes them. kLaunchOutOfResources at once
// when `bytes` exceed the whole budget (no wait could help); kLaunchFailed when `cancel` is set
// while waiting.
Status ReserveCooperativeResident(uint64_t bytes, const std::atomic<bool>* cancel);
// Gives back what ReserveCooperativeResident took.
void ReleaseCooperativeResident(uint64_t bytes);
// The budget: kMaxCooperativeResidentBytes unless a test set a smaller one.
uint64_t CooperativeResidentBudget();
// Tests: a smaller budget (clamped to kMaxCooperativeResidentBytes), so that a test need not
// hold hundreds of MiB to fill it.
void SetCooperativeResidentBudgetForTesting(uint64_t bytes);

}  // namespace pvgpu::ptx
