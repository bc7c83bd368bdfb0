// Per-session limits on the number of objects of each kind a guest may hold at once. They bound
// what one session can make the daemon keep in host memory (table entries, adapter contexts,
// parsed modules, mappings) however it behaves; device memory has its own quota
// (SessionPolicy::memory_quota). A creation past a limit is refused with CUDA_ERROR_OUT_OF_MEMORY:
// the result every one of these calls documents for exhausted resources, so programs already
// handle it (CUDA has no "too many objects" result, and INVALID_VALUE would blame the caller's
// arguments).
//
// Set per listener: pvgpud --limits, the config file's "limits" (host/config.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace pvgpu::host {

struct SessionLimits {
  // The defaults are far above what real programs hold (PyTorch keeps tens of streams and a
  // few hundred modules per device) and small enough that a session at every limit costs the
  // daemon tens of MiB of tables, not gigabytes.
  uint64_t contexts = 64;   // each may be a real CUDA context on a cuda adapter
  uint64_t modules = 4096;  // counted across the session's contexts, as are the kinds below
  uint64_t streams = 4096;
  uint64_t events = 65536;
  uint64_t regions = 4096;        // pinned host regions (each an mmap of a guest memfd)
  uint64_t allocations = 262144;  // device allocations, module globals and mapped regions
  // Module images too large for one channel message arrive in chunks and are staged in the
  // daemon's memory until loaded (host/session_upload.cc): at most `uploads` at once, holding
  // at most `upload_bytes` together, which is also the largest image a session may load. The
  // largest images real libraries load are tens of MB (cuRAND's is 29 MB); the bound keeps a
  // hostile guest from making the daemon hold more than that per session.
  uint64_t uploads = 16;
  uint64_t upload_bytes = 256u << 20;
  // CUDA arrays (each also one of `allocations`) and texture and surface objects
  // (host/session_texture.cc).
  uint64_t arrays = 65536;
  uint64_t textures = 65536;

  // Graphs (host/session_graph.cc, docs/graphs.md): instantiated graphs' device work kept on
  // the host, at most `graph_execs` pieces holding `graph_nodes` nodes together (a node is a
  // message's bytes, at most a few KiB: the default bounds them to a few hundred MiB).
  uint64_t graph_execs = 4096;
  uint64_t graph_nodes = 1u << 18;
  // Virtual memory management (host/session_vmm.cc, docs/memory.md): address reservations and
  // physical allocations; each mapping is also one of `allocations`.
  uint64_t reservations = 4096;
  uint64_t physicals = 65536;
};

// "streams=256,events=1024": sets the named limits, leaving the others as they are. Each value
// is a positive integer (upload_bytes: a count of bytes). Errors name the offending item.
Status ParseSessionLimits(const std::string& text, SessionLimits* limits);
// The limit named `name` ("contexts", "modules", ...), or nullptr for an unknown name.
uint64_t* FindLimit(SessionLimits& limits, const std::string& name);
// The names, for messages: "contexts, modules, streams, events, regions, allocations, ...".
std::string LimitNames();

}  // namespace pvgpu::host
