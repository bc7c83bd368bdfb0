// Typed handle stores: the objects of one kind a session (or one of its contexts) holds, by the
// handle the guest chose for each, and the per-session budget that caps how many there are.
//
// A handle is an id the guest never reuses (protocol/messages.json), so the id itself tells a
// stale handle from a live one: a destroyed object's id names nothing. The generated dispatch
// looks every handle up here before any handler runs (Session::Find, Session::Fresh).
//
// Not synchronized: the session thread owns them (Session::mutex_ guards the structural
// changes that Snapshot and Stop can see).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace pvgpu::host {

// How many objects of one kind a session holds, against the limit its listener set. Creations
// the budget refused are counted too, against the same limit: a store remembers their ids
// (HandleStore::Refuse), and a guest that keeps creating past its errors is not allowed to make
// that memory grow without bound.
class ObjectBudget {
 public:
  explicit ObjectBudget(uint64_t limit) : limit_(limit) {}
  ObjectBudget(const ObjectBudget&) = delete;
  ObjectBudget& operator=(const ObjectBudget&) = delete;

  // Takes one object's room; false when the limit is reached.
  bool Take() {
    if (used_ >= limit_) return false;
    ++used_;
    return true;
  }
  void Give(uint64_t count = 1) { used_ -= count; }
  bool full() const { return used_ >= limit_; }
  bool TakeRefusal() {
    if (refused_ >= limit_) return false;
    ++refused_;
    return true;
  }
  void GiveRefusals(uint64_t count) { refused_ -= count; }

  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_; }

 private:
  const uint64_t limit_;
  uint64_t used_ = 0;
  uint64_t refused_ = 0;
};

template <typename T>
class HandleStore {
 public:
  explicit HandleStore(ObjectBudget& budget) : budget_(budget) {}
  ~HandleStore() { Clear(); }
  HandleStore(const HandleStore&) = delete;
  HandleStore& operator=(const HandleStore&) = delete;

  T* Find(uint64_t id) {
    auto it = objects_.find(id);
    return it == objects_.end() ? nullptr : &it->second;
  }
  // Whether `id` may name a new object: nonzero, not live, and not a refused creation's.
  bool Fresh(uint64_t id) const {
    return id != 0 && objects_.count(id) == 0 && refused_.count(id) == 0;
  }
  // Creates the object `id` names (Fresh(id) holds) from `args`; nullptr, creating nothing,
  // when the budget is spent. Objects never move: the pointer lasts until Erase.
  template <typename... Args>
  T* Add(uint64_t id, Args&&... args) {
    if (!budget_.Take()) return nullptr;
    return &objects_.try_emplace(id, std::forward<Args>(args)...).first->second;
  }
  bool Erase(uint64_t id) {
    if (objects_.erase(id) == 0) return false;
    budget_.Give();
    return true;
  }
  void Clear() {
    budget_.Give(objects_.size());
    budget_.GiveRefusals(refused_.size());
    objects_.clear();
    refused_.clear();
  }

  // An asynchronous creation of `id` the budget refused (the guest learns of it at its next
  // synchronization): naming `id` afterwards is that refusal's error, not an unknown handle.
  // False when the session holds as many refusals of this kind as its limit.
  bool Refuse(uint64_t id) {
    if (!budget_.TakeRefusal()) return false;
    refused_.insert(id);
    return true;
  }
  bool Refused(uint64_t id) const { return refused_.count(id) != 0; }
  // Forgets a refused creation (the guest destroyed what it never got).
  bool Forget(uint64_t id) {
    if (refused_.erase(id) == 0) return false;
    budget_.GiveRefusals(1);
    return true;
  }

  const ObjectBudget& budget() const { return budget_; }
  size_t size() const { return objects_.size(); }
  auto begin() { return objects_.begin(); }
  auto end() { return objects_.end(); }
  auto begin() const { return objects_.begin(); }
  auto end() const { return objects_.end(); }

 private:
  ObjectBudget& budget_;
  // unordered_map keeps its elements in place on rehash, so Find's pointers stay valid.
  std::unordered_map<uint64_t, T> objects_;
  std::unordered_set<uint64_t> refused_;
};

}  // namespace pvgpu::host
