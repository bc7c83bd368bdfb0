#include "ptx/native.h"

#include <mutex>
#include <unordered_map>

namespace pvgpu::ptx {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<ExecFn, NativeDesc> map;
};

Registry& TheRegistry() {
  static Registry* r = new Registry;  // never destroyed: handlers register at static init
  return *r;
}

}  // namespace

void RegisterNative(ExecFn fn, const NativeDesc& desc) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> l(r.mu);
  r.map.emplace(fn, desc);
}

const NativeDesc* FindNative(ExecFn fn) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> l(r.mu);
  auto it = r.map.find(fn);
  return it == r.map.end() ? nullptr : &it->second;
}

}  // namespace pvgpu::ptx
