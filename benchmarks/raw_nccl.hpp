// The raw NCCL side of mpidist-bench, for --backend nccl: the same collective through a
// communicator the benchmark creates itself (rank 0's unique id sent with MPI_Bcast), on device
// buffers, synchronized on its own stream so the time covers completion. Built only when mpidist
// is built with NCCL (MPIDIST_HAVE_NCCL); otherwise every function throws.
#pragma once

#include <cstddef>

#include "bench.hpp"

namespace bench {

/// True when this build can run raw NCCL (and allocate device buffers).
bool raw_nccl_built() noexcept;

/// Device memory for the benchmark buffers (CUDA builds only; throws otherwise).
void* device_alloc(std::size_t bytes);
void device_free(void* ptr) noexcept;
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);
/// True when a CUDA device is visible to this rank.
bool device_present() noexcept;

/// Creates the raw communicator and stream into run.nccl_comm / run.nccl_stream (collective).
void nccl_setup(Run& run, MPI_Comm comm);
/// Destroys them (collective).
void nccl_teardown(Run& run) noexcept;

void nccl_all_reduce(Run& run);
void nccl_broadcast(Run& run);
void nccl_all_gather(Run& run);
void nccl_reduce_scatter(Run& run);
void nccl_reduce(Run& run);

}  // namespace bench
