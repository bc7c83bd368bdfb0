// Driver API: stream memory operations (cuStreamWriteValue32/64, cuStreamWaitValue32/64,
// cuStreamBatchMemOp). A write is a 4- or 8-byte host-to-device copy on the stream: posted
// without waiting, in order with the stream's other work, its value taken at the call. A wait
// is a StreamWaitValue message the host runs in order: the context's later work waits for the
// value (host/session_memops.cc). Both are posted, never waited for; a bad address surfaces at
// the call when the guest's records already show it, else at the next synchronization.
// docs/memory.md describes what a wait can and cannot wait for.
#include "guest/cuda/copy.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/state.h"
#include "guest/cuda/unsupported.h"

namespace pvgpu::guest {

namespace {

constexpr unsigned int kConditionMask = 0xf;

// On a capturing stream the operations become one batch memory operation node, run at each
// launch (nothing when the stream is not capturing).
std::optional<Code> CaptureMemOps(const StreamRef& stream,
                                  std::vector<CUstreamBatchMemOpParams> ops) {
  if (!CaptureActive()) return std::nullopt;
  auto node = std::make_unique<CUgraphNode_st>();
  node->type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
  node->ctx = stream.ctx;
  node->memops = std::move(ops);
  return CaptureNode(stream, std::move(node));
}

CUstreamBatchMemOpParams WriteOp(CUdeviceptr addr, uint64_t value, uint32_t width,
                                 unsigned int flags) {
  CUstreamBatchMemOpParams op{};
  op.writeValue.operation = width == 4 ? CU_STREAM_MEM_OP_WRITE_VALUE_32
                                       : CU_STREAM_MEM_OP_WRITE_VALUE_64;
  op.writeValue.address = addr;
  op.writeValue.value64 = width == 4 ? static_cast<uint32_t>(value) : value;
  op.writeValue.flags = flags;
  return op;
}

CUstreamBatchMemOpParams WaitOp(CUdeviceptr addr, uint64_t value, uint32_t width,
                                unsigned int flags) {
  CUstreamBatchMemOpParams op{};
  op.waitValue.operation = width == 4 ? CU_STREAM_MEM_OP_WAIT_VALUE_32
                                      : CU_STREAM_MEM_OP_WAIT_VALUE_64;
  op.waitValue.address = addr;
  op.waitValue.value64 = width == 4 ? static_cast<uint32_t>(value) : value;
  op.waitValue.flags = flags;
  return op;
}

// The flags of a write and of a wait, as cuStreamWriteValue/WaitValue and batches check them.
Code CheckWriteFlags(unsigned int flags) {
  return (flags & ~CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) != 0 ? Code::kInvalidValue
                                                                  : Code::kOk;
}

Code CheckWaitFlags(unsigned int flags) {
  if ((flags & kConditionMask) > CU_STREAM_WAIT_VALUE_NOR) return Code::kInvalidValue;
  if ((flags & ~(kConditionMask | CU_STREAM_WAIT_VALUE_FLUSH)) != 0) return Code::kInvalidValue;
  if ((flags & CU_STREAM_WAIT_VALUE_FLUSH) != 0) {
    // No remote (RDMA) writer reaches pvgpu's device memory; the device says so
    // (CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES is 0), and the flag is refused as there.
    static OnceFlag once;
    return static_cast<Code>(NotSupported("CU_STREAM_WAIT_VALUE_FLUSH", &once));
  }
  return Code::kOk;
}

Code WriteValue(const StreamRef& stream, CUdeviceptr addr, uint64_t value, uint32_t width,
                unsigned int flags) {
  if (Code code = CheckWriteFlags(flags); code != Code::kOk) return code;
  if (addr % width != 0) return Code::kInvalidValue;
  if (auto captured = CaptureMemOps(stream, {WriteOp(addr, value, width, flags)})) {
    return *captured;
  }
  // Little-endian: the low `width` bytes of `value` are the value to write.
  return CopyHtoD(addr, &value, width, stream, /*async=*/true);
}

Code WaitValue(const StreamRef& stream, CUdeviceptr addr, uint64_t value, uint32_t width,
               unsigned int flags) {
  if (Code code = CheckWaitFlags(flags); code != Code::kOk) return code;
  const unsigned int condition = flags & kConditionMask;
  if (addr % width != 0) return Code::kInvalidValue;
  CUctx_st* owner = nullptr;
  if (Code code = OwnerOf(addr, width, &owner); code != Code::kOk) return code;
  // The wait blocks the stream's context on the host, which checks the address among that
  // context's memory: memory of another context cannot be waited on from here.
  if (owner != stream.ctx) return Code::kInvalidValue;
  if (auto captured = CaptureMemOps(stream, {WaitOp(addr, value, width, flags)})) {
    return *captured;
  }
  protocol::StreamWaitValueRequest request;
  request.ctx = stream.ctx->handle;
  request.stream = stream.wire();
  request.address = addr;
  request.value = value;
  request.width = width;
  request.condition = condition;
  uint64_t seq = 0;
  if (Code code = stream.ctx->client->Post(request, {}, &seq); code != Code::kOk) return code;
  NoteSubmitted(stream, seq);
  return Code::kOk;
}

// One operation of a batch, validated before any of the batch is posted.
Code CheckBatchOp(const CUstreamBatchMemOpParams& op) {
  switch (op.operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
      return Code::kOk;
    case CU_STREAM_MEM_OP_BARRIER:
      // Every operation of a context runs in order on the host: a barrier has nothing to order.
      return Code::kOk;
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES: {
      static OnceFlag once;
      return static_cast<Code>(NotSupported("CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES", &once));
    }
    default:
      return Code::kInvalidValue;
  }
}

}  // namespace

Code CheckMemOps(CUctx_st* ctx, const CUstreamBatchMemOpParams* ops, unsigned int count) {
  if (count == 0 || count > 256 || ops == nullptr) return Code::kInvalidValue;
  for (unsigned int i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& op = ops[i];
    if (Code code = CheckBatchOp(op); code != Code::kOk) return code;
    const bool wait = op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                      op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
    const bool write = op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
                       op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64;
    if (!wait && !write) continue;  // a barrier
    const uint32_t width = (op.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                            op.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32) ? 4 : 8;
    const CUdeviceptr addr = wait ? op.waitValue.address : op.writeValue.address;
    const unsigned int flags = wait ? op.waitValue.flags : op.writeValue.flags;
    if (Code code = wait ? CheckWaitFlags(flags) : CheckWriteFlags(flags); code != Code::kOk) {
      return code;
    }
    if (addr % width != 0) return Code::kInvalidValue;
    CUctx_st* owner = nullptr;
    if (Code code = OwnerOf(addr, width, &owner); code != Code::kOk) return code;
    if (owner != ctx) return Code::kInvalidValue;
  }
  return Code::kOk;
}

namespace api {

Code StreamWriteValue32_v2(const StreamRef& stream, CUdeviceptr addr, cuuint32_t value,
                           unsigned int flags) {
  return WriteValue(stream, addr, value, 4, flags);
}

Code StreamWriteValue64_v2(const StreamRef& stream, CUdeviceptr addr, cuuint64_t value,
                           unsigned int flags) {
  return WriteValue(stream, addr, value, 8, flags);
}

Code StreamWaitValue32_v2(const StreamRef& stream, CUdeviceptr addr, cuuint32_t value,
                          unsigned int flags) {
  return WaitValue(stream, addr, value, 4, flags);
}

Code StreamWaitValue64_v2(const StreamRef& stream, CUdeviceptr addr, cuuint64_t value,
                          unsigned int flags) {
  return WaitValue(stream, addr, value, 8, flags);
}

Code StreamBatchMemOp_v2(const StreamRef& stream, unsigned int count,
                         CUstreamBatchMemOpParams* paramArray, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  if (count > 256) return Code::kInvalidValue;  // CUDA's documented limit
  for (unsigned int i = 0; i < count; ++i) {
    if (Code code = CheckBatchOp(paramArray[i]); code != Code::kOk) return code;
  }
  if (CaptureActive() && count > 0) {  // one node for the batch
    if (Code code = CheckMemOps(stream.ctx, paramArray, count); code != Code::kOk) return code;
    if (auto captured = CaptureMemOps(stream, {paramArray, paramArray + count})) return *captured;
  }
  for (unsigned int i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& op = paramArray[i];
    Code code = Code::kOk;
    switch (op.operation) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        code = WaitValue(stream, op.waitValue.address, op.waitValue.value, 4, op.waitValue.flags);
        break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        code = WaitValue(stream, op.waitValue.address, op.waitValue.value64, 8, op.waitValue.flags);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        code =
            WriteValue(stream, op.writeValue.address, op.writeValue.value, 4, op.writeValue.flags);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        code = WriteValue(stream, op.writeValue.address, op.writeValue.value64, 8,
                          op.writeValue.flags);
        break;
      default:
        break;  // a barrier
    }
    if (code != Code::kOk) return code;
  }
  return Code::kOk;
}

}  // namespace api

}  // namespace pvgpu::guest
