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
      graph_execs(budgets.graph_execs),
      arrays(budgets.arrays),
      textures(budgets.textures),
      physicals(budgets.physicals),
      reservations(budgets.reservations),
      allocation_budget_(budgets.allocations) {}

ContextState::~ContextState() {
  if (impl) impl->Cancel();
  allocation_budget_.Give(allocations_.size());
}

bool ContextState::AddAllocation(uint64_t base, uint64_t size, bool module_owned,
                                 uint64_t reservation) {
  if (!allocation_budget_.Take()) return false;
  if (!allocations_.Insert(base, size, {module_owned || reservation != 0, reservation})) {
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

Reservation::~Reservation() {
  // With its context (VmmFree refuses a reservation that is still mapped): the adapter undoes
  // the mappings and gives the addresses back, so that they hold no physical memory.
  for (const auto& [address, entry] : mappings) (void)impl_.UnmapPhysical(address, entry.size);
  allocations_.Give(mappings.size());
  (void)impl_.FreeAddress(base, size);
}

bool Reservation::WholeMappings(uint64_t address, uint64_t length,
                                const std::function<void(uint64_t, uint64_t, Mapping&)>& each) {
  if (length == 0 || !Holds(address, length)) return false;
  auto it = mappings.FindBase(address);
  uint64_t covered = address;
  for (; it != mappings.end() && it->first == covered && covered - address < length; ++it) {
    covered += it->second.size;
  }
  if (covered - address != length) return false;
  if (each) {
    for (it = mappings.FindBase(address); it != mappings.end() && it->first < address + length;
         ++it) {
      each(it->first, it->second.size, it->second.value);
    }
  }
  return true;
}

}  // namespace pvgpu::host
