// How many CPUs this process may use.
#pragma once

namespace pvgpu {

// The CPUs in the calling thread's affinity mask (what taskset, cpusets and containers' CPU
// sets allow), else the online CPUs; at least 1. A thread started later inherits the mask, so
// this sizes a worker pool for the threads it will start. (std::thread::hardware_concurrency
// counts every online CPU, even ones the process may not run on.)
unsigned UsableCpus();

}  // namespace pvgpu
