// The NCCL path: device buffers, one NCCL call per collective, then (without a caller's stream) a
// wait that polls the stream and NCCL's asynchronous error, bounded by MPIDIST_TIMEOUT.
#include <span>
#include <string>
#include <thread>

#include "../cuda/runtime.hpp"
#include "../device_backend.hpp"
#include "../timeout.hpp"
#include "communicator.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace nccl {
namespace {

ncclDataType_t datatype(DataType dtype) {
  switch (dtype) {
    case DataType::Float16: return ncclFloat16;
    case DataType::BFloat16: return ncclBfloat16;
    case DataType::Float32: return ncclFloat32;
    case DataType::Float64: return ncclFloat64;
    case DataType::Int8: return ncclInt8;
    case DataType::UInt8: return ncclUint8;
    case DataType::Int32: return ncclInt32;
    case DataType::Int64: return ncclInt64;
    case DataType::UInt32: return ncclUint32;
    case DataType::UInt64: return ncclUint64;
  }
  throw Error("nccl", "element type " + std::to_string(static_cast<int>(dtype)) + " has no NCCL datatype");
}

// NCCL's ncclAvg sums and divides (integers: a division after the sum, truncating toward zero).
ncclRedOp_t reduction(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Product: return ncclProd;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Avg: return ncclAvg;
    default: break;  // And/Or: the front end rejects them for tensors
  }
  throw Error("nccl", "reduction '" + std::string(to_string(op)) + "' has no NCCL counterpart");
}

void enqueue(const Call& c, ncclComm_t comm, cudaStream_t stream) {
  const ncclDataType_t type = datatype(c.dtype);
  switch (c.kind) {
    case CollectiveKind::AllReduce:
      MPIDIST_NCCL_CHECK(ncclAllReduce(c.in, c.out, c.count, type, reduction(c.op), comm, stream), comm);
      return;
    case CollectiveKind::Broadcast:
      MPIDIST_NCCL_CHECK(ncclBroadcast(c.in, c.out, c.count, type, c.root, comm, stream), comm);
      return;
    case CollectiveKind::Reduce:
      MPIDIST_NCCL_CHECK(ncclReduce(c.in, c.out, c.count, type, reduction(c.op), c.root, comm, stream), comm);
      return;
    case CollectiveKind::AllGather:
      MPIDIST_NCCL_CHECK(ncclAllGather(c.in, c.out, c.count, type, comm, stream), comm);
      return;
    case CollectiveKind::ReduceScatter:
      MPIDIST_NCCL_CHECK(ncclReduceScatter(c.in, c.out, c.count, type, reduction(c.op), comm, stream), comm);
      return;
  }
}

// Waits for `stream` without blocking inside CUDA, so that a peer that never arrives, or an
// asynchronous NCCL failure, ends in an Error instead of a hang. Either way the communicator is
// aborted: its peers may be stuck in the same collective and only an abort releases them.
void wait(const char* operation, Communicator& comm, cudaStream_t stream) {
  const Deadline deadline(operation);
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) cuda::throw_cuda_error("cudaStreamQuery", state, __FILE__, __LINE__);
    ncclResult_t async = ncclSuccess;
    MPIDIST_NCCL_CHECK(ncclCommGetAsyncError(comm.get(), &async), comm.get());
    if (async != ncclSuccess && async != ncclInProgress) {
      std::string detail = std::string("NCCL failed while the collective ran: ") + ncclGetErrorString(async);
      const char* last = ncclGetLastError(comm.get());
      if (last != nullptr && *last != '\0') detail += ": " + std::string(last);
      comm.abort(operation);
      throw Error(operation, detail + "; the NCCL communicator was aborted");
    }
    if (deadline.passed()) {
      comm.abort(operation);
      throw Error(operation, "timed out after " + std::to_string(static_cast<int>(deadline.seconds())) +
                                 " s waiting for the NCCL collective to finish (MPIDIST_TIMEOUT); a rank may have "
                                 "stopped calling collectives. The NCCL communicator was aborted");
    }
    std::this_thread::yield();
  }
}

}  // namespace
}  // namespace nccl

void run_nccl(const Call& call) {
  // The device was checked against this rank's before the ranks agreed (transports.cpp).
  auto& comm = nccl::communicator(*call.group, call.name);
  // Without a caller's stream: the group's non-blocking stream, then wait here until done.
  const cudaStream_t stream = call.stream ? call.stream : comm.stream();
  nccl::enqueue(call, comm.get(), stream);
  if (call.stream == nullptr) nccl::wait(call.name, comm, stream);
}

void run_nccl_many(std::span<const Call> calls) {
  if (calls.empty()) return;
  const Call& first = calls.front();
  auto& comm = nccl::communicator(*first.group, first.name);
  const cudaStream_t stream = first.stream ? first.stream : comm.stream();
  MPIDIST_NCCL_CHECK(ncclGroupStart(), comm.get());
  try {
    for (const Call& call : calls) nccl::enqueue(call, comm.get(), stream);
  } catch (...) {
    ncclGroupEnd();  // close the group; the first failure is the one to report
    throw;
  }
  MPIDIST_NCCL_CHECK(ncclGroupEnd(), comm.get());
  if (first.stream == nullptr) nccl::wait(first.name, comm, stream);
}

}  // namespace mpidist::detail
