// The cuGetProcAddress table, generated from cudaTypedefs.h into cuda_proc_table_autogen.cc.
#pragma once

#include <cstddef>
#include <string_view>

namespace pvgpu::guest {

// Which default stream an entry's symbol uses: the legacy one (plain names) or the per-thread
// one (the _ptds/_ptsz names).
enum class StreamKind : unsigned char { kLegacy, kPerThread };

struct ProcEntry {
  const char* base;    // the name an application asks for: "cuMemAlloc"
  int version;         // the CUDA version that introduced this ABI: 3020
  StreamKind stream;
  const char* symbol;  // the exported symbol with that ABI: "cuMemAlloc_v2"
  void* address;
};

// Sorted by base name, then version; each base's entries are contiguous.
extern const ProcEntry kProcTable[];
extern const size_t kProcTableSize;

enum class LookupStatus { kFound, kSymbolNotFound, kVersionNotSufficient };

// Picks the newest entry of `base` whose version is <= `version`, of the per-thread kind when
// `per_thread` and one exists, else of the legacy kind.
LookupStatus LookupProc(std::string_view base, int version, bool per_thread,
                        const ProcEntry** entry);

}  // namespace pvgpu::guest
