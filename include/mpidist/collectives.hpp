// Tensor collectives on host or CUDA device memory: MPI for host buffers, NCCL (or CUDA-aware MPI,
// or staging through pinned host memory) for device buffers.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"

// cudaStream_t without the CUDA headers (driver_types.h declares it the same way).
struct CUstream_st;

namespace mpidist {

/// A CUDA stream (cudaStream_t). With a stream, a device-memory collective is queued on it and
/// returns at once; without one, the call returns when the result is ready. Ignored for host memory.
using Stream = CUstream_st*;

/// In place: every rank's `buffer` becomes the element-wise reduction over all ranks.
void all_reduce(BufferView buffer, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// Out of place: `out` (same count and dtype as `in`) receives the reduction.
void all_reduce(BufferView in, BufferView out, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// Root's `buffer` is copied to every rank's `buffer` (same count everywhere).
void broadcast(BufferView buffer, int root = 0, Stream stream = nullptr);
/// `out` (world_size × in.count()) receives every rank's `in`, in rank order.
void all_gather(BufferView in, BufferView out, Stream stream = nullptr);
/// `in` (world_size × out.count()) is reduced; rank r receives block r in `out`.
void reduce_scatter(BufferView in, BufferView out, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr);
/// The reduction lands in root's `out`; `out` is not written on other ranks.
void reduce(BufferView in, BufferView out, ReduceOp op = ReduceOp::Sum, int root = 0, Stream stream = nullptr);

/// all_reduce on a span (`all_reduce(std::span(gradients), ReduceOp::Avg)`).
template <Element T, std::size_t Extent>
void all_reduce(std::span<T, Extent> buffer, ReduceOp op = ReduceOp::Sum, Stream stream = nullptr) {
  all_reduce(BufferView(buffer), op, stream);
}
/// broadcast on a span.
template <Element T, std::size_t Extent>
void broadcast(std::span<T, Extent> buffer, int root = 0, Stream stream = nullptr) {
  broadcast(BufferView(buffer), root, stream);
}

/// virtex `average_across_processes`: in-place mean over all ranks.
void average(BufferView buffer, Stream stream = nullptr);
/// The same for a dictionary of tensors (one collective per entry, in key order on every rank).
void average(const std::map<std::string, BufferView>& buffers, Stream stream = nullptr);

/// Collective: creates this job's NCCL communicator now (device selection, the duplicate-GPU
/// check, ncclCommInitRank) instead of at the first device collective, so start-up failures and
/// start-up time show before training. Returns false, doing nothing, when NCCL is not built, no
/// device is visible or MPIDIST_BACKEND=mpi.
bool init_nccl();

/// Which transport a buffer's collectives take.
enum class Backend { Mpi, CudaAwareMpi, Nccl };
/// "mpi", "cuda-aware-mpi", "nccl".
std::string_view to_string(Backend backend) noexcept;

/// ignite `backend()`: the backend used for device memory when one is usable ("nccl" if built and a
/// device is present, else "cuda-aware-mpi" if MPI supports it), else "mpi"; MPIDIST_BACKEND
/// (mpi|nccl|auto) overrides.
std::string backend();
/// ignite `available_backends()`: always "mpi", plus "nccl" and "cuda-aware-mpi" where usable.
std::vector<std::string> available_backends();

}  // namespace mpidist
