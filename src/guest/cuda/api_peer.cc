// Driver API: peer access between devices and copies between contexts. An adapter's memory is
// its own (the cpu adapter's lives in the host daemon's process, a GPU's on its board, and two
// adapters may live on different hosts), so no device maps another's: peer access is never
// possible, and a copy between contexts is staged through the guest, as a device-to-device
// copy between contexts already is (copy.h).
#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// Both ranges must lie in memory of the contexts the call names.
Code CheckOwners(CUdeviceptr dst, CUctx_st* dst_ctx, CUdeviceptr src, CUctx_st* src_ctx,
                 size_t bytes) {
  CUctx_st* owner = nullptr;
  if (Code code = OwnerOf(dst, bytes, &owner); code != Code::kOk) return code;
  if (owner != dst_ctx) return Code::kInvalidValue;
  if (Code code = OwnerOf(src, bytes, &owner); code != Code::kOk) return code;
  return owner == src_ctx ? Code::kOk : Code::kInvalidValue;
}

}  // namespace

namespace api {

Code DeviceCanAccessPeer(int* canAccessPeer, const Device& dev, const Device& peerDev) {
  *canAccessPeer = 0;
  return Code::kOk;
}

Code CtxEnablePeerAccess(CUctx_st* ctx, CUctx_st* peerContext, unsigned int Flags) {
  if (peerContext == ctx) return Code::kInvalidContext;
  if (Flags != 0) return Code::kInvalidValue;
  return FromCu(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);  // cuDeviceCanAccessPeer says 0
}

Code CtxDisablePeerAccess(CUctx_st* ctx, CUctx_st* peerContext) {
  return FromCu(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);  // it never is
}

// Ordered on the destination context's legacy default stream, which follows all of its work;
// the staged read of the source waits for the source context's.
Code MemcpyPeer(CUdeviceptr dstDevice, CUctx_st* dstContext, CUdeviceptr srcDevice,
                CUctx_st* srcContext, size_t ByteCount) {
  if (ByteCount == 0) return Code::kOk;
  if (Code code = CheckOwners(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
      code != Code::kOk) {
    return code;
  }
  const StreamRef stream{nullptr, dstContext, nullptr};
  if (Code code = OrderAfterHostFuncs(stream); code != Code::kOk) return code;
  return CopyDtoD(dstDevice, srcDevice, ByteCount, stream);
}

Code MemcpyPeerAsync(CUdeviceptr dstDevice, CUctx_st* dstContext, CUdeviceptr srcDevice,
                     CUctx_st* srcContext, size_t ByteCount, const StreamRef& hStream) {
  if (ByteCount == 0) return Code::kOk;
  if (Code code = CheckOwners(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
      code != Code::kOk) {
    return code;
  }
  return CopyDtoD(dstDevice, srcDevice, ByteCount, hStream);
}

}  // namespace api
}  // namespace pvgpu::guest
