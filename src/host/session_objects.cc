#include "host/session_objects.h"

#include <sys/mman.h>

namespace pvgpu::host {

Region::~Region() { munmap(data_, size_); }

ContextState::ContextState(SessionBudgets& budgets, uint32_t device,
                           std::unique_ptr<adapters::Context> impl)
    : device(device),
      impl(std::move(impl)),
      modules(budgets.modules),
      streams(budgets.streams),
      events(budgets.events),
      arrays(budgets.arrays),
      textures(budgets.textures),
      graph_execs(budgets.graph_execs),
      allocation_budget_(budgets.allocations) {}

ContextState::~ContextState() {
  if (impl) impl->Cancel();
  allocation_budget_.Give(allocations_.size());
}

bool ContextState::AddAllocation(uint64_t base, uint64_t size, bool module_owned) {
  if (!allocation_budget_.Take()) return false;
  if (!allocations_.Insert(base, size, {module_owned})) {
    // The adapter handed out a range that overlaps one it already gave: refuse it rather than
    // let two allocations alias in the checks.
    allocation_budget_.Give();
    return false;
  }
  return true;
}

void ContextState::EraseAllocation(uint64_t base) {
  if (allocations_.erase(base) != 0) allocation_budget_.Give();
}

bool ContextState::FreeableAt(uint64_t base) const {
  auto it = allocations_.FindBase(base);
  return it != allocations_.end() && !it->second.value.module_owned;
}

}  // namespace pvgpu::host
