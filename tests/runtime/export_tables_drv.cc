// The driver's export tables used the way NVIDIA's CUDA runtime uses them, from a driver-API
// program against a real private pvgpud with two devices. Everything is checked against what
// the public API says: the primary-context handle against cuDevicePrimaryCtxRetain, the
// integrity answer against an HMAC-MD2 this program computes from cuDevice* calls itself.
//
//   export_tables_drv FATBIN   (a fat binary holding the saxpy kernel)
#include <cuda.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "common/md2.h"

#define CHECK(call) Expect((call), CUDA_SUCCESS, #call, __LINE__)
#define EXPECT_RESULT(expected, call) Expect((call), (expected), #call, __LINE__)
#define EXPECT_TRUE(cond)                                              \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "line %d: expected %s\n", __LINE__, #cond); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

namespace {

void Expect(CUresult got, CUresult want, const char* what, int line) {
  if (got == want) return;
  const char* got_name = "?";
  const char* want_name = "?";
  cuGetErrorName(got, &got_name);
  cuGetErrorName(want, &want_name);
  std::fprintf(stderr, "line %d: %s returned %s, expected %s\n", line, what, got_name, want_name);
  std::exit(1);
}

CUuuid Uuid(std::initializer_list<int> bytes) {
  CUuuid id;
  int i = 0;
  for (int b : bytes) id.bytes[i++] = static_cast<char>(b);
  return id;
}

const CUuuid kCudartInterface = Uuid({0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87,
                                      0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9});
const CUuuid kHooks = Uuid({0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00,
                            0x20, 0x0c, 0x0a, 0x66});
const CUuuid kToolsTls = Uuid({0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6,
                               0xe7, 0x8a, 0x3a, 0xec, 0xdc});
const CUuuid kStorage = Uuid({0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68,
                              0xf3, 0x55, 0xd8, 0x95, 0x93});
const CUuuid kChecks = Uuid({0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5,
                             0x00, 0x6d, 0xfa, 0x7e});
const CUuuid kIntegrity = Uuid({0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba,
                                0x12, 0x3c, 0x66, 0xe1, 0xf2});
const CUuuid kUnnamed = Uuid({0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb,
                              0x46, 0x9e, 0x7c, 0x0d, 0xd9});

using Table = void* const*;

Table Get(const CUuuid& id) {
  const void* table = nullptr;
  CHECK(cuGetExportTable(&table, &id));
  EXPECT_TRUE(table != nullptr);
  return static_cast<Table>(table);
}

uintptr_t SizeOf(Table table) { return reinterpret_cast<uintptr_t>(table[0]); }

template <typename F>
F Slot(Table table, int slot) {
  EXPECT_TRUE(table[slot] != nullptr);
  return reinterpret_cast<F>(table[slot]);
}

using PutFn = CUresult (*)(CUcontext, void*, void*, void (*)(CUcontext, void*, void*));
using DeleteFn = CUresult (*)(CUcontext, void*);
using GetFn = CUresult (*)(void**, CUcontext, void*);
using IntegrityFn = CUresult (*)(uint32_t, uint64_t, uint64_t*);

struct Destroyed {
  CUcontext ctx = nullptr;
  void* key = nullptr;
  void* value = nullptr;
  int calls = 0;
} g_destroyed;

void RecordDestroyed(CUcontext ctx, void* key, void* value) {
  g_destroyed.ctx = ctx;
  g_destroyed.key = key;
  g_destroyed.value = value;
  ++g_destroyed.calls;
}

void Append32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void Append64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// The integrity answer, computed here the way the runtime computes it: from the public API.
pvgpu::Md2Digest ExpectedIntegrity(Table integrity, Table cudart, uint32_t version,
                                   uint64_t seconds) {
  int driver = 0, count = 0;
  CHECK(cuDriverGetVersion(&driver));
  CHECK(cuDeviceGetCount(&count));
  std::vector<uint8_t> message;
  Append32(message, static_cast<uint32_t>(driver));
  Append32(message, version);
  Append32(message, static_cast<uint32_t>(getpid()));
  Append32(message, static_cast<uint32_t>(pthread_self()));
  Append64(message, reinterpret_cast<uint64_t>(cudart));
  Append64(message, reinterpret_cast<uint64_t>(integrity));
  Append64(message, reinterpret_cast<uint64_t>(integrity[1]));
  Append64(message, seconds);
  for (int i = 0; i < count; ++i) {
    CUdevice device;
    CHECK(cuDeviceGet(&device, i));
    CUuuid uuid;
    CHECK(cuDeviceGetUuid(&uuid, device));
    message.insert(message.end(), uuid.bytes, uuid.bytes + 16);
    for (CUdevice_attribute a : {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                                 CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID}) {
      int value = 0;
      CHECK(cuDeviceGetAttribute(&value, a, device));
      Append32(message, static_cast<uint32_t>(value));
    }
  }
  const uint8_t key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                           0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
  return pvgpu::HmacMd2(key, message);
}

bool SameAnswer(const uint64_t out[2], const pvgpu::Md2Digest& want) {
  return std::memcmp(out, want.data(), want.size()) == 0;
}

// Runs saxpy from `module` and checks it.
void RunSaxpy(CUmodule module) {
  CUfunction saxpy;
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  const int n = 1000;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.f;
  }
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc(&dx, n * sizeof(float)));
  CHECK(cuMemAlloc(&dy, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
  CHECK(cuMemcpyHtoD(dy, y.data(), n * sizeof(float)));
  int count = n;
  float a = 3.f;
  void* args[] = {&count, &a, &dx, &dy};
  CHECK(cuLaunchKernel(saxpy, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  CHECK(cuMemcpyDtoH(out.data(), dy, n * sizeof(float)));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(out[i] == 3.f * i + 1.f);
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FATBIN\n", argv[0]);
    return 2;
  }
  // Before cuInit, as the runtime asks: f8cff951 is declined, unknown tables are errors.
  const void* table = nullptr;
  EXPECT_RESULT(CUDA_ERROR_NOT_FOUND, cuGetExportTable(&table, &kUnnamed));
  const CUuuid unknown = Uuid({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&table, &unknown));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(nullptr, &kCudartInterface));
  CHECK(cuInit(0));
  int devices = 0;
  CHECK(cuDeviceGetCount(&devices));
  EXPECT_TRUE(devices == 2);

  const Table cudart = Get(kCudartInterface);
  const Table hooks = Get(kHooks);
  const Table tls = Get(kToolsTls);
  const Table storage = Get(kStorage);
  const Table checks = Get(kChecks);
  const Table integrity = Get(kIntegrity);
  EXPECT_TRUE(Get(kCudartInterface) == cudart);  // fixed addresses
  EXPECT_TRUE(SizeOf(cudart) == 13 * 8 && SizeOf(hooks) == 7 * 8 && SizeOf(tls) == 4 * 8 &&
              SizeOf(checks) == 4 * 8 && SizeOf(integrity) == 3 * 8);
  EXPECT_TRUE(storage[0] != nullptr && storage[3] == nullptr);  // no size slot; NULL-terminated
  // A slot nobody implements answers NOT_SUPPORTED rather than crashing.
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, Slot<CUresult (*)()>(cudart, 3)());
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED, Slot<CUresult (*)()>(tls, 1)());

  // Tool hooks: zeroed flag arrays at least as long as the runtimes need.
  for (auto [slot, minimum] : {std::pair{2, size_t{523}}, std::pair{6, size_t{14}}}) {
    void* buffer = nullptr;
    size_t count = 0;
    Slot<void (*)(void**, size_t*)>(hooks, slot)(&buffer, &count);
    EXPECT_TRUE(buffer != nullptr && count >= minimum);
    for (size_t i = 0; i < count * 4; ++i) EXPECT_TRUE(static_cast<uint8_t*>(buffer)[i] == 0);
  }

  // The primary-context handle, before any retain, is what the retain returns; asking does not
  // retain it, and it can be made current first, as the runtime does.
  CUcontext handles[2];
  for (int d = 0; d < 2; ++d) {
    CHECK(Slot<CUresult (*)(CUcontext*, CUdevice)>(cudart, 2)(&handles[d], d));
    unsigned int flags = 0;
    int active = 1;
    CHECK(cuDevicePrimaryCtxGetState(d, &flags, &active));
    EXPECT_TRUE(active == 0);
  }
  EXPECT_TRUE(handles[0] != handles[1]);
  EXPECT_RESULT(CUDA_ERROR_INVALID_DEVICE,
                Slot<CUresult (*)(CUcontext*, CUdevice)>(cudart, 2)(&handles[0], 2));
  CHECK(cuCtxSetCurrent(handles[0]));
  CUcontext retained[2];
  CHECK(cuDevicePrimaryCtxRetain(&retained[0], 0));
  CHECK(cuDevicePrimaryCtxRetain(&retained[1], 1));
  EXPECT_TRUE(retained[0] == handles[0] && retained[1] == handles[1]);

  // Context checks.
  EXPECT_TRUE(Slot<uint32_t (*)()>(checks, 3)() == 0);
  uint32_t check = 7;
  void* unused = nullptr;
  CHECK(Slot<CUresult (*)(CUcontext, uint32_t*, void**)>(checks, 2)(handles[0], &check, &unused));
  EXPECT_TRUE(check == 0);

  // Context-local storage: per context, NULL meaning the current one, destructors at reset.
  auto put = Slot<PutFn>(storage, 0);
  auto del = Slot<DeleteFn>(storage, 1);
  auto get = Slot<GetFn>(storage, 2);
  int key = 0, other_key = 0, state = 0;
  void* value = nullptr;
  EXPECT_TRUE(get(&value, nullptr, &key) != CUDA_SUCCESS);  // a miss is an error
  CHECK(put(nullptr, &key, &state, &RecordDestroyed));
  CHECK(get(&value, nullptr, &key));
  EXPECT_TRUE(value == &state);
  CHECK(get(&value, handles[0], &key));
  EXPECT_TRUE(value == &state);
  EXPECT_TRUE(get(&value, handles[1], &key) != CUDA_SUCCESS);
  EXPECT_TRUE(get(&value, handles[0], &other_key) != CUDA_SUCCESS);
  std::thread([&] {
    void* seen = nullptr;
    EXPECT_TRUE(get(&seen, nullptr, &key) != CUDA_SUCCESS);  // nothing current here yet
    CHECK(cuCtxSetCurrent(handles[0]));
    CHECK(get(&seen, nullptr, &key));
    EXPECT_TRUE(seen == &state);
  }).join();
  CHECK(del(nullptr, &key));
  EXPECT_TRUE(get(&value, nullptr, &key) != CUDA_SUCCESS);
  EXPECT_TRUE(del(nullptr, &key) != CUDA_SUCCESS);
  EXPECT_TRUE(g_destroyed.calls == 0);  // delete does not destroy

  CHECK(put(handles[0], &key, &state, &RecordDestroyed));
  CHECK(cuDevicePrimaryCtxReset(0));
  EXPECT_TRUE(g_destroyed.calls == 1 && g_destroyed.ctx == handles[0] && g_destroyed.key == &key &&
              g_destroyed.value == &state);
  EXPECT_TRUE(get(&value, handles[0], &key) != CUDA_SUCCESS);
  CUcontext again = nullptr;
  CHECK(cuDevicePrimaryCtxRetain(&again, 0));  // the handle survives the reset
  EXPECT_TRUE(again == handles[0]);
  CHECK(cuCtxSetCurrent(again));
  CUdeviceptr probe;
  CHECK(cuMemAlloc(&probe, 64));
  CHECK(cuMemFree(probe));

  CUcontext created;
  CHECK(cuCtxCreate(&created, nullptr, 0, 1));
  CHECK(put(created, &other_key, &state, &RecordDestroyed));
  CHECK(cuCtxDestroy(created));
  EXPECT_TRUE(g_destroyed.calls == 2 && g_destroyed.ctx == created &&
              g_destroyed.key == &other_key);
  EXPECT_RESULT(CUDA_ERROR_INVALID_CONTEXT, put(created, &key, &state, &RecordDestroyed));

  CHECK(put(handles[1], &key, &state, &RecordDestroyed));
  CHECK(cuDevicePrimaryCtxRelease(1));  // its only reference: the context goes
  EXPECT_TRUE(g_destroyed.calls == 3 && g_destroyed.ctx == handles[1]);
  CUcontext reretained = nullptr;
  CHECK(cuDevicePrimaryCtxRetain(&reretained, 1));
  EXPECT_TRUE(reretained == handles[1]);  // one handle for the life of the process

  // The integrity answer, for each version the runtime asks about, from two threads.
  CHECK(cuCtxSetCurrent(handles[0]));
  auto check_integrity = Slot<IntegrityFn>(integrity, 1);
  const uint64_t seconds = static_cast<uint64_t>(std::time(nullptr));
  uint64_t main_answer[2] = {};
  for (uint32_t version : {13000u, 13001u, 13002u, 12092u}) {
    uint64_t out[2] = {};
    CHECK(check_integrity(version, seconds, out));
    EXPECT_TRUE(SameAnswer(out, ExpectedIntegrity(integrity, cudart, version, seconds)));
    if (version == 13002u) std::memcpy(main_answer, out, sizeof(out));
  }
  std::thread([&] {
    uint64_t out[2] = {};
    CHECK(check_integrity(13002, seconds, out));
    EXPECT_TRUE(SameAnswer(out, ExpectedIntegrity(integrity, cudart, 13002, seconds)));
    EXPECT_TRUE(std::memcmp(out, main_answer, sizeof(out)) != 0);  // the thread is hashed
  }).join();

  // Modules from a fat binary, through its wrapper struct or its header.
  std::ifstream file(argv[1], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(bytes.size() > 16);
  std::vector<uint64_t> fatbin(bytes.size() / 8 + 1);
  std::memcpy(fatbin.data(), bytes.data(), bytes.size());
  struct {
    uint32_t magic, version;
    const void* data;
    void* filename;
  } wrapper = {0x466243B1u, 1, fatbin.data(), nullptr};
  CUmodule module;
  CHECK(Slot<CUresult (*)(CUmodule*, const void*)>(cudart, 1)(&module, &wrapper));
  RunSaxpy(module);
  CHECK(cuModuleUnload(module));
  using FromFatbinFn = CUresult (*)(const void*, CUmodule*, void*, void*, unsigned int);
  CHECK(Slot<FromFatbinFn>(cudart, 8)(fatbin.data(), &module, nullptr, nullptr, 0));
  RunSaxpy(module);
  CHECK(cuModuleUnload(module));
  using FromWrapperExFn = CUresult (*)(CUmodule*, const void*, void*, void*, unsigned int);
  CHECK(Slot<FromWrapperExFn>(cudart, 6)(&module, &wrapper, nullptr, nullptr, 0));
  CHECK(cuModuleUnload(module));
  EXPECT_RESULT(CUDA_ERROR_NOT_SUPPORTED,
                Slot<FromWrapperExFn>(cudart, 6)(&module, &wrapper, &state, nullptr, 0));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                Slot<CUresult (*)(CUmodule*, const void*)>(cudart, 1)(&module, fatbin.data()));
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE,
                Slot<FromFatbinFn>(cudart, 8)(&wrapper, &module, nullptr, nullptr, 0));

  CHECK(cuDevicePrimaryCtxRelease(0));
  CHECK(cuDevicePrimaryCtxRelease(0));
  CHECK(cuDevicePrimaryCtxRelease(1));
  std::printf("export tables: 6 tables, primary handle, storage, integrity, modules: ok\n");
  return 0;
}
