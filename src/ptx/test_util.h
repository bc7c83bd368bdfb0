// Test helpers: an AddressSpace that owns its allocations and a small launcher.
#pragma once

#include <array>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "ptx/ptx.h"

namespace pvgpu::ptx::testing {

class TestMemory final : public AddressSpace {
 public:
  uint64_t Alloc(size_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    uint64_t base = next_;
    next_ += (bytes + 0xFFFF) & ~uint64_t{0xFFF};  // leave gaps so overruns fault
    next_ += 0x1000;
    allocs_[base] = std::vector<uint8_t>(bytes);
    return base;
  }
  void Free(uint64_t base) {
    std::lock_guard<std::mutex> l(mu_);
    allocs_.erase(base);
  }
  template <typename T>
  uint64_t Upload(const std::vector<T>& v) {
    uint64_t a = Alloc(v.size() * sizeof(T));
    std::memcpy(Host(a), v.data(), v.size() * sizeof(T));
    return a;
  }
  template <typename T>
  std::vector<T> Download(uint64_t addr, size_t n) {
    std::vector<T> v(n);
    std::memcpy(v.data(), Host(addr), n * sizeof(T));
    return v;
  }
  uint8_t* Host(uint64_t addr) {
    Range r;
    return Lookup(addr, 1, &r) ? r.host + (addr - r.base) : nullptr;
  }
  uint8_t* Translate(uint64_t address, uint64_t size) override {
    Range r;
    if (!Lookup(address, size, &r)) return nullptr;
    return r.host + (address - r.base);
  }
  bool Lookup(uint64_t address, uint64_t size, Range* out) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = allocs_.upper_bound(address);
    if (it == allocs_.begin()) return false;
    --it;
    uint64_t base = it->first, len = it->second.size();
    if (address - base > len || size > len - (address - base)) return false;
    *out = Range{base, len, it->second.data()};
    return true;
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, std::vector<uint8_t>> allocs_;
  uint64_t next_ = 0x7000000000ull;
};

// Packs kernel arguments following KernelInfo::params.
class Params {
 public:
  explicit Params(const KernelInfo& k) : k_(k), buf_(k.param_bytes) {}
  template <typename T>
  Params& Set(size_t i, T v) {
    std::memcpy(buf_.data() + k_.params.at(i).offset, &v, sizeof(T));
    return *this;
  }
  std::span<const uint8_t> span() const { return buf_; }

 private:
  const KernelInfo& k_;
  std::vector<uint8_t> buf_;
};

// Loads the program and places its globals in `mem`.
struct Loaded {
  std::shared_ptr<const Program> program;
  std::vector<uint64_t> global_addrs;
  std::string error_log;
};

// Places a loaded (or failed) program's globals in `mem`.
inline Loaded PlaceInto(StatusOr<std::shared_ptr<const Program>> p, std::string error_log,
                        TestMemory& mem, Status* status = nullptr) {
  Loaded l;
  l.error_log = std::move(error_log);
  if (status) *status = p.ok() ? Status::Ok() : p.status();
  if (!p.ok()) return l;
  l.program = *p;
  for (const auto& g : l.program->globals()) {
    uint64_t a = mem.Alloc(std::max<uint64_t>(g.size, 1));
    if (!g.init.empty()) std::memcpy(mem.Host(a), g.init.data(), g.init.size());
    l.global_addrs.push_back(a);
  }
  for (size_t i = 0; i < l.program->globals().size(); ++i) {
    for (const auto& r : l.program->globals()[i].relocs) {
      uint64_t v = l.global_addrs[r.target] + static_cast<uint64_t>(r.addend);
      std::memcpy(mem.Host(l.global_addrs[i] + r.offset), &v, 8);
    }
  }
  return l;
}

inline Loaded LoadInto(const std::string& ptx, TestMemory& mem, Status* status = nullptr) {
  std::string log;
  auto p = LoadProgram(ptx, &log);
  return PlaceInto(std::move(p), std::move(log), mem, status);
}

inline Executor& SharedExecutor() {
  static Executor* e = new Executor(2);
  return *e;
}

}  // namespace pvgpu::ptx::testing

namespace pvgpu::ptx::testing {

// One kernel argument as raw bytes.
struct Arg {
  std::vector<uint8_t> bytes;
  template <typename T>
  Arg(T v) : bytes(sizeof(T)) {  // NOLINT: implicit on purpose
    std::memcpy(bytes.data(), &v, sizeof(T));
  }
};

// Loads a PTX file (from the build-time corpus) and launches its kernels on TestMemory.
class Runner {
 public:
  explicit Runner(const std::string& ptx) {
    Status s;
    loaded_ = LoadInto(ptx, mem_, &s);
    load_status_ = s;
  }
  static std::string ReadFile(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  bool ok() const { return loaded_.program != nullptr; }
  // The engine launches run on (unset: DefaultEngine()).
  void set_engine(Engine e) { engine_ = e; }
  const Status& load_status() const { return load_status_; }
  TestMemory& mem() { return mem_; }
  const Program& program() const { return *loaded_.program; }
  uint64_t GlobalAddress(const std::string& name) const {
    int i = loaded_.program->FindGlobal(name);
    return i < 0 ? 0 : loaded_.global_addrs[i];
  }

  Status Launch(const std::string& kernel, Dim3 grid, Dim3 block, std::vector<Arg> args,
                uint32_t shared = 0, const std::atomic<bool>* cancel = nullptr) {
    return Launch(SharedExecutor(), kernel, grid, block, std::move(args), shared, cancel);
  }
  Status Launch(Executor& executor, const std::string& kernel, Dim3 grid, Dim3 block,
                std::vector<Arg> args, uint32_t shared = 0,
                const std::atomic<bool>* cancel = nullptr) {
    return LaunchWith(executor, kernel, LaunchConfig{grid, block, shared}, std::move(args), {},
                      cancel);
  }

  // A cooperative launch as the cpu adapter makes one: a zeroed grid workspace in device
  // memory for the launch's lifetime, its address in %envreg1 (high half) and %envreg2 (low).
  Status LaunchCooperative(Executor& executor, const std::string& kernel, Dim3 grid, Dim3 block,
                           std::vector<Arg> args, uint32_t shared = 0,
                           const std::atomic<bool>* cancel = nullptr) {
    const uint64_t workspace = mem_.Alloc(kWorkspaceBytes);
    std::array<uint32_t, kNumEnvRegs> envreg{};
    envreg[kGridWorkspaceEnvRegHi] = static_cast<uint32_t>(workspace >> 32);
    envreg[kGridWorkspaceEnvRegLo] = static_cast<uint32_t>(workspace);
    Status s = LaunchWith(executor, kernel, LaunchConfig{grid, block, shared, true},
                          std::move(args), envreg, cancel);
    mem_.Free(workspace);
    return s;
  }
  static constexpr size_t kWorkspaceBytes = 64;

  // The general form: any configuration and %envreg values.
  Status LaunchWith(Executor& executor, const std::string& kernel, const LaunchConfig& config,
                    std::vector<Arg> args, const std::array<uint32_t, kNumEnvRegs>& envreg,
                    const std::atomic<bool>* cancel = nullptr) {
    const KernelInfo* k = loaded_.program->FindKernel(kernel);
    if (!k) return Error(Code::kNotFound, "no kernel " + kernel);
    if (args.size() != k->params.size()) return Error(Code::kInvalidValue, "wrong argument count");
    std::vector<uint8_t> buf(k->param_bytes);
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].bytes.size() != k->params[i].size)
        return Error(Code::kInvalidValue, "argument " + std::to_string(i) + " has the wrong size");
      std::memcpy(buf.data() + k->params[i].offset, args[i].bytes.data(), args[i].bytes.size());
    }
    LaunchEnv env;
    env.memory = &mem_;
    env.global_addresses = loaded_.global_addrs;
    env.cancel = cancel;
    env.print = [this](std::string_view s) {
      std::lock_guard<std::mutex> l(print_mu_);
      printed_ += s;
    };
    env.envreg = envreg;
    env.engine = engine_;
    return executor.Launch(*loaded_.program, *k, config, buf, env);
  }

  std::string printed() {
    std::lock_guard<std::mutex> l(print_mu_);
    return printed_;
  }

 private:
  TestMemory mem_;
  Loaded loaded_;
  Status load_status_;
  std::optional<Engine> engine_;
  std::mutex print_mu_;
  std::string printed_;
};

}  // namespace pvgpu::ptx::testing
