#include "guest/cuda/state.h"

namespace pvgpu::guest {

DriverState& DriverState::Get() {
  static DriverState* state = new DriverState();  // never destroyed: atexit-safe
  return *state;
}

CUresult DriverState::Init(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(mutex_);
  if (initialized_.load()) return CUDA_SUCCESS;
  Client& client = Client::Get();
  Status connected = client.Connect();
  if (!connected.ok()) {
    const CUresult error = connected.code() == Code::kNoDevice ? CUDA_ERROR_NO_DEVICE
                                                               : ToCu(connected.code());
    init_error_.store(error);
    return error;
  }
  const uint32_t count = client.hello().adapter_count;
  if (count == 0) {
    init_error_.store(CUDA_ERROR_NO_DEVICE);
    return CUDA_ERROR_NO_DEVICE;
  }
  std::vector<Device> devices(count);
  for (uint32_t i = 0; i < count; ++i) {
    protocol::DeviceGetInfoRequest request;
    request.device = i;
    const Code code = client.Call(request, {}, &devices[i].info);
    if (code != Code::kOk) {
      init_error_.store(ToCu(code));
      return ToCu(code);
    }
  }
  devices_ = std::move(devices);
  primaries_.assign(count, {});
  initialized_.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

std::vector<CUctx_st*>& ContextStack() {
  thread_local std::vector<CUctx_st*> stack;
  return stack;
}

CUctx_st* CurrentContext() {
  auto& stack = ContextStack();
  return stack.empty() ? nullptr : stack.back();
}

bool LiveContext(CUctx_st* ctx) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  return ctx != nullptr && state.contexts.count(ctx) != 0;
}

CUresult CurrentLiveContext(CUctx_st** ctx) {
  if (CUresult init = DriverState::Get().CheckInit(); init != CUDA_SUCCESS) return init;
  CUctx_st* current = CurrentContext();
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (!LiveContext(current)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *ctx = current;
  return CUDA_SUCCESS;
}

CUresult ResolveStream(CUstream stream, CUctx_st** ctx, uint64_t* wire_handle) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    *wire_handle = 0;
    return CurrentLiveContext(ctx);
  }
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  if (state.streams.count(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (state.contexts.count(stream->ctx) == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *ctx = stream->ctx;
  *wire_handle = stream->handle;
  return CUDA_SUCCESS;
}

void NoteSubmitted(CUctx_st* ctx, CUstream stream, uint64_t seq) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  ctx->last_seq = seq;
  if (stream != nullptr && state.streams.count(stream) != 0) stream->last_seq = seq;
}

bool FindAllocation(CUdeviceptr dptr, size_t size, CUctx_st** owner) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  auto it = state.allocations.upper_bound(dptr);
  if (it == state.allocations.begin()) return false;
  --it;
  const size_t offset = dptr - it->first;
  if (offset >= it->second.first || size > it->second.first - offset) return false;
  if (owner != nullptr) *owner = it->second.second;
  return true;
}

}  // namespace pvgpu::guest
