// Running one block: setting up its warps (register files, special registers) and taking turns
// between them. An ordinary launch runs each block to completion on one worker; a cooperative
// launch keeps every block resident and runs them a slice at a time (executor.cc), so a block
// that waits for another gives the worker up instead of holding it.
#pragma once

#include <cstdint>
#include <vector>

#include "ptx/warp.h"

namespace pvgpu::ptx {

// A block's warps and memory. Workers keep one each and reuse it for the blocks they run, so
// that block start-up does not allocate; each block of a cooperative launch owns one for the
// launch's lifetime.
struct Scratch {
  std::vector<Warp> warps;
  std::vector<uint8_t> regs, local, shared;
  TranslateCache cache;
  unsigned index = 0;      // %smid of the blocks run in these buffers
  uint64_t launch_id = 0;  // launch whose register templates are in `regs`
};

// Host memory one block of launch L holds in its Scratch (registers, local, shared memory).
uint64_t BlockScratchBytes(const LaunchCtx& L);

// Prepares block `linear` (x fastest) of launch L to run in `s`; `block` must stay put while
// the block runs (its warps point to it).
void StartBlock(LaunchCtx& L, uint64_t linear, Block& block, Scratch& s);

// Runs a started block until every warp has exited or the launch stops (fault, cancel).
void FinishBlock(LaunchCtx& L, Scratch& s);

// How a block's slice ended.
enum class SliceEnd : uint8_t {
  kFinished,  // every warp exited, or the launch stopped (fault, cancellation)
  kWaiting,   // a warp yielded in a spin loop: the block waits for another
  kMore,      // preempted or blocked at a barrier with work left
};

// Gives each runnable warp of a started block one turn: until it exits, waits at a barrier,
// yields in a spin loop or uses up its time slice.
SliceEnd RunBlockSlice(LaunchCtx& L, Scratch& s);

inline void RunBlock(LaunchCtx& L, uint64_t linear, Scratch& s) {
  Block block;
  StartBlock(L, linear, block, s);
  FinishBlock(L, s);
}

}  // namespace pvgpu::ptx
