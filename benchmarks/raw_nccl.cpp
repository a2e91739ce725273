// The raw NCCL calls mpidist-bench compares against (--backend nccl).
#include "raw_nccl.hpp"

#include <stdexcept>
#include <string>

#if MPIDIST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#if MPIDIST_HAVE_NCCL
#include <nccl.h>
#endif

namespace bench {
namespace {

#if !MPIDIST_HAVE_CUDA || !MPIDIST_HAVE_NCCL
[[noreturn]] void not_built(const char* what) {
  throw std::runtime_error(std::string(what) + ": mpidist-bench was built without CUDA/NCCL");
}
#endif

#if MPIDIST_HAVE_CUDA
void cuda_check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
}
#endif

#if MPIDIST_HAVE_NCCL
void nccl_check(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(status));
}

ncclDataType_t nccl_type(mpidist::DataType dtype) {
  using mpidist::DataType;
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
    case DataType::Complex64:
    case DataType::Complex128: break;  // NCCL has no complex type
  }
  throw std::invalid_argument("nccl_type: unknown dtype");
}

ncclRedOp_t nccl_op(mpidist::ReduceOp op) {
  using mpidist::ReduceOp;
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Product: return ncclProd;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Avg: return ncclAvg;
    default: throw std::invalid_argument("raw NCCL has no logical reductions");
  }
}

ncclComm_t comm_of(const Run& run) { return static_cast<ncclComm_t>(run.nccl_comm); }
cudaStream_t stream_of(const Run& run) { return static_cast<cudaStream_t>(run.nccl_stream); }

// The time must cover completion, as mpidist's stream-less call does.
void finish(const Run& run, ncclResult_t status, const char* call) {
  nccl_check(status, call);
  cuda_check(cudaStreamSynchronize(stream_of(run)), "cudaStreamSynchronize");
}
#endif

}  // namespace

bool raw_nccl_built() noexcept { return MPIDIST_HAVE_NCCL != 0; }

bool device_present() noexcept {
#if MPIDIST_HAVE_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

void* device_alloc([[maybe_unused]] std::size_t bytes) {
#if MPIDIST_HAVE_CUDA
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc");
  return p;
#else
  not_built("device_alloc");
#endif
}

void device_free([[maybe_unused]] void* ptr) noexcept {
#if MPIDIST_HAVE_CUDA
  if (ptr != nullptr) cudaFree(ptr);
#endif
}

void copy_to_device([[maybe_unused]] void* dst, [[maybe_unused]] const void* src, [[maybe_unused]] std::size_t bytes) {
#if MPIDIST_HAVE_CUDA
  cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  // From pageable memory the copy returns before its DMA lands (on the legacy default stream),
  // which NCCL's non-blocking stream does not wait for.
  cuda_check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize after the copy");
#else
  not_built("copy_to_device");
#endif
}

void copy_to_host([[maybe_unused]] void* dst, [[maybe_unused]] const void* src, [[maybe_unused]] std::size_t bytes) {
#if MPIDIST_HAVE_CUDA
  cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
#else
  not_built("copy_to_host");
#endif
}

#if MPIDIST_HAVE_NCCL
void nccl_setup(Run& run, MPI_Comm comm) {
  // The benchmark's own communicator, bootstrapped over MPI the way every NCCL user does it,
  // on the device mpidist chose for this rank (mpidist::device() ran cudaSetDevice).
  ncclUniqueId id{};
  if (run.rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclComm_t nccl = nullptr;
  nccl_check(ncclCommInitRank(&nccl, run.nranks, id, run.rank), "ncclCommInitRank");
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  run.nccl_comm = nccl;
  run.nccl_stream = stream;
}

void nccl_teardown(Run& run) noexcept {
  if (run.nccl_comm != nullptr) ncclCommDestroy(comm_of(run));
  if (run.nccl_stream != nullptr) cudaStreamDestroy(stream_of(run));
  run.nccl_comm = run.nccl_stream = nullptr;
}

void nccl_all_reduce(Run& run) {
  finish(run, ncclAllReduce(run.send, run.recv, run.counts.recv, nccl_type(run.dtype), nccl_op(run.redop),
                            comm_of(run), stream_of(run)), "ncclAllReduce");
}
void nccl_broadcast(Run& run) {
  finish(run, ncclBroadcast(run.recv, run.recv, run.counts.recv, nccl_type(run.dtype), run.root, comm_of(run),
                            stream_of(run)), "ncclBroadcast");
}
void nccl_all_gather(Run& run) {
  finish(run, ncclAllGather(run.send, run.recv, run.counts.send, nccl_type(run.dtype), comm_of(run), stream_of(run)),
         "ncclAllGather");
}
void nccl_reduce_scatter(Run& run) {
  finish(run, ncclReduceScatter(run.send, run.recv, run.counts.recv, nccl_type(run.dtype), nccl_op(run.redop),
                                comm_of(run), stream_of(run)), "ncclReduceScatter");
}
void nccl_reduce(Run& run) {
  finish(run, ncclReduce(run.send, run.recv, run.counts.recv, nccl_type(run.dtype), nccl_op(run.redop), run.root,
                         comm_of(run), stream_of(run)), "ncclReduce");
}
#else
void nccl_setup(Run&, MPI_Comm) { not_built("nccl_setup"); }
void nccl_teardown(Run&) noexcept {}
void nccl_all_reduce(Run&) { not_built("nccl_all_reduce"); }
void nccl_broadcast(Run&) { not_built("nccl_broadcast"); }
void nccl_all_gather(Run&) { not_built("nccl_all_gather"); }
void nccl_reduce_scatter(Run&) { not_built("nccl_reduce_scatter"); }
void nccl_reduce(Run&) { not_built("nccl_reduce"); }
#endif

}  // namespace bench
