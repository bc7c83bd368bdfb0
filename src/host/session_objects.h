// The objects a session holds for its guest, one type per kind, and the budgets that cap how
// many of each it may hold (session_limits.h). Handles name them in the session's typed stores
// (handle_store.h): contexts, pinned regions and module uploads in the session, modules, streams
// and events in their context, so a handle of another context or another kind names nothing there.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "adapters/adapter.h"
#include "common/texture.h"
#include "common/range_map.h"
#include "host/fault_accounting.h"
#include "host/handle_store.h"
#include "host/session_limits.h"
#include "protocol/protocol_autogen.h"

namespace pvgpu::host {

// One budget per kind, shared by every store of that kind in the session.
struct SessionBudgets {
  explicit SessionBudgets(const SessionLimits& limits)
      : contexts(limits.contexts),
        modules(limits.modules),
        streams(limits.streams),
        events(limits.events),
        regions(limits.regions),
        allocations(limits.allocations),
        uploads(limits.uploads),
        arrays(limits.arrays),
        textures(limits.textures),
        graph_execs(limits.graph_execs),
        graph_nodes(limits.graph_nodes),
        reservations(limits.reservations),
        physicals(limits.physicals) {}
  ObjectBudget contexts, modules, streams, events, regions, allocations, uploads;
  ObjectBudget arrays, textures;
  // Graphs (session_graph.cc): host-side pieces of instantiated graphs, and their nodes.
  ObjectBudget graph_execs, graph_nodes;
  // Virtual memory management (session_vmm.cc).
  ObjectBudget reservations, physicals;
};

// A module image arriving in chunks (session_upload.cc): the bytes so far, in order, of an
// image of `size` bytes. Room for the whole image is reserved at the start, which the
// session's upload_bytes limit bounds; pages are touched only as chunks arrive.
struct Upload {
  explicit Upload(uint64_t size) : size(size) { bytes.reserve(size); }
  const uint64_t size;
  std::vector<uint8_t> bytes;
};

// Pinned host memory: a guest's sealed memfd mapped into the daemon (unmapped on destruction).
class Region {
 public:
  Region(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Whether [offset, offset + size) lies inside, without overflow.
  bool Holds(uint64_t offset, uint64_t size) const {
    return offset <= size_ && size <= size_ - offset;
  }

 private:
  uint8_t* const data_;
  const uint64_t size_;
};

struct Stream {
  uint32_t flags = 0;
  int32_t priority = 0;
};

struct Event {
  bool recorded = false;
  int64_t timestamp_ns = 0;
  // Asynchronous adapters: set when the work before the record has completed (an adapter
  // thread writes it, hence shared and atomic); timestamp_ns is only the submission time.
  std::shared_ptr<std::atomic<int64_t>> completed_ns;
};

// A CUDA array (host/session_texture.cc): its layout and its memory in the adapter context,
// which goes with the last holder (the array's handle, the texture and surface objects over it).
class ArrayState {
 public:
  ArrayState(adapters::Context& impl, uint64_t base, texture::ArrayLayout layout)
      : impl_(impl), base(base), layout(std::move(layout)) {}
  ~ArrayState() { (void)impl_.Free(base); }
  ArrayState(const ArrayState&) = delete;
  ArrayState& operator=(const ArrayState&) = delete;

 private:
  adapters::Context& impl_;  // outlives every array of its context (ContextState's order)

 public:
  const uint64_t base;
  const texture::ArrayLayout layout;
};

struct TextureObject {
  std::shared_ptr<ArrayState> array;  // null over device memory
};

// The device work of an instantiated graph, in the order it runs (session_graph.cc): each
// entry is the op and bytes (fixed request, then payload) of a message GraphExecCreate
// validated. Its nodes count against the session's graph_nodes budget until it goes.
struct GraphExec {
  struct Entry {
    uint32_t op;
    size_t offset;  // in bytes
    size_t size;
  };
  GraphExec(ObjectBudget& nodes, std::vector<uint8_t> bytes, std::vector<Entry> entries)
      : nodes_(nodes), bytes(std::move(bytes)), entries(std::move(entries)) {}
  ~GraphExec() { nodes_.Give(entries.size()); }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

 private:
  ObjectBudget& nodes_;

 public:
  const std::vector<uint8_t> bytes;
  const std::vector<Entry> entries;
};

// Virtual memory management (session_vmm.cc, docs/memory.md). Physical memory lives while the
// guest holds it or a mapping uses it (each holds a reference).
struct PhysicalState {
  explicit PhysicalState(std::unique_ptr<adapters::PhysicalMemory> impl) : impl(std::move(impl)) {}
  const std::unique_ptr<adapters::PhysicalMemory> impl;
};

// A range of device addresses the guest reserved, and what is mapped into it. Destroying it
// (with its context, or VmmFree) unmaps everything and gives the addresses back.
class Reservation {
 public:
  struct Mapping {
    std::shared_ptr<PhysicalState> physical;
    uint64_t offset;
    bool accessible;
  };
  Reservation(adapters::Context& impl, ObjectBudget& allocations, uint64_t base, uint64_t size)
      : impl_(impl), allocations_(allocations), base(base), size(size) {}
  ~Reservation();
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

  // Whether [address, address + length) lies inside the reservation.
  bool Holds(uint64_t address, uint64_t length) const {
    return address >= base && address - base <= size && length <= size - (address - base);
  }
  // Whether [address, address + length) is exactly a run of whole adjacent mappings; `each`
  // (if given) receives every one of them: its address, size and record.
  bool WholeMappings(uint64_t address, uint64_t length,
                     const std::function<void(uint64_t, uint64_t, Mapping&)>& each = {});

 private:
  adapters::Context& impl_;  // outlives every reservation of its context (ContextState's order)
  ObjectBudget& allocations_;

 public:
  const uint64_t base;
  const uint64_t size;
  RangeMap<Mapping> mappings;  // each one counted in `allocations_`
};

// One guest context on an adapter, and the objects that live in it.
class ContextState {
 public:
  ContextState(SessionBudgets& budgets, uint32_t device, std::unique_ptr<adapters::Context> impl);
  // Cancels running work, then frees the modules before the adapter context that holds them
  // (the members are declared in that order) and with it every allocation.
  ~ContextState();
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;

  // The device ranges the guest may name in this context: its allocations, the globals of its
  // modules and the regions mapped into it. False, adding nothing, when the session's budget
  // of allocations is spent.
  // `reservation` (nonzero) marks an accessible mapping of virtual memory: adjacent ones of the
  // same reservation count as one range.
  bool AddAllocation(uint64_t base, uint64_t size, bool module_owned, uint64_t reservation = 0);
  void EraseAllocation(uint64_t base);
  // Whether [address, address + size) lies inside one of them.
  bool InAllocation(uint64_t address, uint64_t size) const {
    return allocations_.Contains(address, size) ||
           allocations_.FindRun(address, size, [](const Allocation& a, const Allocation& b) {
             return a.reservation != 0 && a.reservation == b.reservation;
           }) != allocations_.end();
  }
  // The store of each kind of object scoped to a context, by kind (the session's dispatch).
  auto& Store(protocol::HandleTag<protocol::HandleKind::kModule>) { return modules; }
  auto& Store(protocol::HandleTag<protocol::HandleKind::kStream>) { return streams; }
  auto& Store(protocol::HandleTag<protocol::HandleKind::kEvent>) { return events; }
  auto& Store(protocol::HandleTag<protocol::HandleKind::kGraphExec>) { return graph_execs; }
  auto& Store(protocol::HandleTag<protocol::HandleKind::kArray>) { return arrays; }
  auto& Store(protocol::HandleTag<protocol::HandleKind::kTexture>) { return textures; }
  auto& Store(protocol::HandleTag<protocol::HandleKind::kPhysical>) { return physicals; }
  auto& Store(protocol::HandleTag<protocol::HandleKind::kReservation>) { return reservations; }

  // Whether `base` starts an allocation cuMemFree may free (not a global, not a mapping).
  bool FreeableAt(uint64_t base) const;

  const uint32_t device;  // index in the session's adapters
  std::unique_ptr<adapters::Context> impl;
  ContextErrors errors;
  HandleStore<std::unique_ptr<adapters::Module>> modules;
  HandleStore<Stream> streams;
  HandleStore<Event> events;
  HandleStore<GraphExec> graph_execs;                     // graphs (session_graph.cc)
  std::unordered_map<uint64_t, uint64_t> mapped_regions;  // region handle -> device address
  // Declared after impl: they go first, arrays freeing their memory in it.
  HandleStore<std::shared_ptr<ArrayState>> arrays;
  HandleStore<TextureObject> textures;
  // Virtual memory management (session_vmm.cc); after impl, like arrays.
  HandleStore<std::shared_ptr<PhysicalState>> physicals;
  HandleStore<Reservation> reservations;  // after physicals: its mappings hold references

 private:
  struct Allocation {
    bool module_owned;  // a module's global or a mapped region: not freed by cuMemFree
    uint64_t reservation;  // nonzero: an accessible mapping of that reservation
  };
  ObjectBudget& allocation_budget_;
  RangeMap<Allocation> allocations_;
};

}  // namespace pvgpu::host
