#include "tools/bench/opencl_device.h"

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <vector>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

namespace pvgpu::tools::bench {

extern const char kBenchKernelsCl[];  // bench/kernels/bench_kernels.cl, embedded

namespace {

// The OpenCL 1.2 entry points the benchmarks use, resolved from libOpenCL.so.1.
struct Cl {
  void* lib = nullptr;
#define PVGPU_CL_FUNCTIONS(X)                                                                \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)              \
  X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue)    \
  X(clCreateProgramWithSource) X(clBuildProgram) X(clGetProgramBuildInfo) X(clReleaseProgram) \
  X(clCreateKernel) X(clReleaseKernel) X(clGetKernelArgInfo) X(clSetKernelArg)               \
  X(clCreateBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer)     \
  X(clEnqueueNDRangeKernel) X(clFinish)
#define PVGPU_CL_MEMBER(name) decltype(&::name) name = nullptr;
  PVGPU_CL_FUNCTIONS(PVGPU_CL_MEMBER)
#undef PVGPU_CL_MEMBER
};

Status ClError(const char* what, cl_int err) {
  return Status(Code::kUnknown, std::string("PoCL: ") + what + " failed (OpenCL error " +
                                    std::to_string(err) + ")");
}

class PoclDevice final : public OpenClDevice {
 public:
  ~PoclDevice() override {
    for (auto& [name, k] : kernels_) cl_.clReleaseKernel(k.kernel);
    for (auto& [id, mem] : buffers_) cl_.clReleaseMemObject(mem);
    if (program_) cl_.clReleaseProgram(program_);
    if (queue_) cl_.clReleaseCommandQueue(queue_);
    if (context_) cl_.clReleaseContext(context_);
    // libOpenCL stays loaded: PoCL's threads may outlive the objects above.
  }

  static StatusOr<std::unique_ptr<OpenClDevice>> Open() {
    auto d = std::unique_ptr<PoclDevice>(new PoclDevice);
    d->cl_.lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (d->cl_.lib == nullptr) {
      return Status(Code::kNotFound,
                    "no PoCL row: libOpenCL.so.1 not found (Debian: pocl-opencl-icd)");
    }
#define PVGPU_CL_RESOLVE(name)                                                        \
  d->cl_.name = reinterpret_cast<decltype(&::name)>(dlsym(d->cl_.lib, #name));        \
  if (d->cl_.name == nullptr) {                                                       \
    return Status(Code::kNotFound, "no PoCL row: libOpenCL.so.1 lacks " #name);       \
  }
    PVGPU_CL_FUNCTIONS(PVGPU_CL_RESOLVE)
#undef PVGPU_CL_RESOLVE
    PVGPU_TRY(d->Init());
    return std::unique_ptr<OpenClDevice>(std::move(d));
  }

  std::string label() const override { return "PoCL"; }
  std::string version() const override { return version_; }
  unsigned compute_units() const override { return units_; }

  StatusOr<uint64_t> Allocate(size_t bytes) override {
    cl_int err = 0;
    cl_mem mem = cl_.clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    if (err != CL_SUCCESS) return ClError("clCreateBuffer", err);
    const uint64_t id = next_id_++;
    buffers_[id] = mem;
    return id;
  }
  Status Free(uint64_t id) override {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return Status(Code::kInvalidValue, "PoCL: no such buffer");
    cl_.clReleaseMemObject(it->second);
    buffers_.erase(it);
    return Status::Ok();
  }
  Status Upload(uint64_t dst, const void* src, size_t bytes) override {
    PVGPU_ASSIGN_OR_RETURN(cl_mem mem, Buffer(dst));
    cl_int err = cl_.clEnqueueWriteBuffer(queue_, mem, CL_TRUE, 0, bytes, src, 0, nullptr, nullptr);
    return err == CL_SUCCESS ? Status::Ok() : ClError("clEnqueueWriteBuffer", err);
  }
  Status Download(void* dst, uint64_t src, size_t bytes) override {
    PVGPU_ASSIGN_OR_RETURN(cl_mem mem, Buffer(src));
    cl_int err = cl_.clEnqueueReadBuffer(queue_, mem, CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr);
    return err == CL_SUCCESS ? Status::Ok() : ClError("clEnqueueReadBuffer", err);
  }
  // Arguments the kernel declares __global are buffer ids (as Allocate returned them); the
  // others are passed as their bytes.
  Status Launch(std::string_view name, Shape grid, Shape block,
                std::initializer_list<KernelArg> args) override {
    PVGPU_ASSIGN_OR_RETURN(Kernel * k, KernelFor(name));
    if (args.size() != k->global.size()) {
      return Status(Code::kInvalidValue, "PoCL: kernel " + std::string(name) + " takes " +
                                             std::to_string(k->global.size()) + " arguments");
    }
    cl_uint i = 0;
    for (const KernelArg& arg : args) {
      cl_int err;
      if (k->global[i]) {
        uint64_t id = 0;
        if (arg.size != sizeof id) return Status(Code::kInvalidValue, "PoCL: buffer argument");
        std::memcpy(&id, arg.data, sizeof id);
        PVGPU_ASSIGN_OR_RETURN(cl_mem mem, Buffer(id));
        err = cl_.clSetKernelArg(k->kernel, i, sizeof mem, &mem);
      } else {
        err = cl_.clSetKernelArg(k->kernel, i, arg.size, arg.data);
      }
      if (err != CL_SUCCESS) return ClError("clSetKernelArg", err);
      ++i;
    }
    const size_t local[3] = {block.x, block.y, block.z};
    const size_t global[3] = {size_t{grid.x} * block.x, size_t{grid.y} * block.y,
                              size_t{grid.z} * block.z};
    cl_int err = cl_.clEnqueueNDRangeKernel(queue_, k->kernel, 3, nullptr, global, local, 0,
                                            nullptr, nullptr);
    return err == CL_SUCCESS ? Status::Ok() : ClError("clEnqueueNDRangeKernel", err);
  }
  Status Synchronize() override {
    cl_int err = cl_.clFinish(queue_);
    return err == CL_SUCCESS ? Status::Ok() : ClError("clFinish", err);
  }

 private:
  struct Kernel {
    cl_kernel kernel = nullptr;
    std::vector<bool> global;  // per argument: a __global pointer
  };

  PoclDevice() = default;

  Status Init() {
    cl_uint count = 0;
    if (cl_.clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) {
      return Status(Code::kNotFound, "no PoCL row: no OpenCL platform (Debian: pocl-opencl-icd)");
    }
    std::vector<cl_platform_id> platforms(count);
    cl_.clGetPlatformIDs(count, platforms.data(), nullptr);
    cl_platform_id pocl = nullptr;
    for (cl_platform_id p : platforms) {
      char name[256] = {};
      cl_.clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
      if (std::string(name).find("Portable Computing Language") != std::string::npos) {
        pocl = p;
        char v[256] = {};
        cl_.clGetPlatformInfo(p, CL_PLATFORM_VERSION, sizeof v - 1, v, nullptr);
        version_ = v;
      }
    }
    if (pocl == nullptr) {
      return Status(Code::kNotFound,
                    "no PoCL row: OpenCL has no PoCL platform (Debian: pocl-opencl-icd)");
    }
    cl_int err = cl_.clGetDeviceIDs(pocl, CL_DEVICE_TYPE_CPU, 1, &device_, nullptr);
    if (err != CL_SUCCESS) return ClError("clGetDeviceIDs (CPU)", err);
    cl_uint units = 0;
    cl_.clGetDeviceInfo(device_, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
    units_ = units;
    context_ = cl_.clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) return ClError("clCreateContext", err);
    queue_ = cl_.clCreateCommandQueue(context_, device_, 0, &err);
    if (err != CL_SUCCESS) return ClError("clCreateCommandQueue", err);
    const char* source = kBenchKernelsCl;
    program_ = cl_.clCreateProgramWithSource(context_, 1, &source, nullptr, &err);
    if (err != CL_SUCCESS) return ClError("clCreateProgramWithSource", err);
    err = cl_.clBuildProgram(program_, 1, &device_, "-cl-kernel-arg-info", nullptr, nullptr);
    if (err != CL_SUCCESS) {
      size_t size = 0;
      cl_.clGetProgramBuildInfo(program_, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      cl_.clGetProgramBuildInfo(program_, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      return Status(Code::kUnknown, "PoCL: building bench_kernels.cl failed: " + log);
    }
    return Status::Ok();
  }

  StatusOr<cl_mem> Buffer(uint64_t id) {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return Status(Code::kInvalidValue, "PoCL: no such buffer");
    return it->second;
  }

  StatusOr<Kernel*> KernelFor(std::string_view name) {
    auto it = kernels_.find(std::string(name));
    if (it != kernels_.end()) return &it->second;
    cl_int err = 0;
    Kernel k;
    k.kernel = cl_.clCreateKernel(program_, std::string(name).c_str(), &err);
    if (err != CL_SUCCESS) {
      return Status(Code::kNotFound, "PoCL: bench_kernels.cl has no kernel " + std::string(name));
    }
    for (cl_uint i = 0;; ++i) {
      cl_kernel_arg_address_qualifier q = 0;
      if (cl_.clGetKernelArgInfo(k.kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q,
                                 nullptr) != CL_SUCCESS) {
        break;  // past the last argument
      }
      k.global.push_back(q == CL_KERNEL_ARG_ADDRESS_GLOBAL);
    }
    return &kernels_.emplace(std::string(name), std::move(k)).first->second;
  }

  Cl cl_;
  std::string version_;
  unsigned units_ = 0;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_program program_ = nullptr;
  std::map<std::string, Kernel> kernels_;
  std::map<uint64_t, cl_mem> buffers_;
  uint64_t next_id_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<OpenClDevice>> OpenClDevice::OpenPocl() { return PoclDevice::Open(); }

}  // namespace pvgpu::tools::bench
