#include "common/cpus.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace pvgpu {

unsigned UsableCpus() {
  cpu_set_t set;
  // Fails (EINVAL) where the kernel's mask is wider than cpu_set_t; the online count then.
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return static_cast<unsigned>(count);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace pvgpu
