// The seam between the core library and its CUDA / NCCL parts. Implemented by lib/cuda/ and
// lib/nccl/ when those are built, and by lib/no_cuda.cpp / lib/no_nccl.cpp otherwise, so that no
// core file needs an #if. No CUDA or NCCL type appears here. Internal.
#pragma once

#include <cstddef>

#include "collective_call.hpp"
#include "mpidist/device.hpp"
#include "mpidist/tensor.hpp"

namespace mpidist::detail {

// ---- CUDA runtime (lib/cuda/) ----

/// Where `data` lives (host for nullptr, for unregistered memory and without CUDA).
struct MemoryLocation {
  MemoryKind kind = MemoryKind::Host;
  int device = -1;
};
MemoryLocation locate_memory(const void* data) noexcept;

/// Number of visible CUDA devices; 0 without CUDA, without a driver, or on any error. Cached.
int cuda_device_count() noexcept;

/// The CUDA device this rank uses (local_rank % device count, as device() picks it), -1 without one.
int rank_device(int local_rank) noexcept;

/// Makes sure all work queued on `stream` so far has finished (no-op for nullptr).
void synchronize_stream(const char* operation, Stream stream);

/// Runs `call`, whose buffers are in device memory, by copying them through a pinned host buffer
/// and calling `host_path` on the host copies. Ordered after earlier work on call.stream; returns
/// when the result is back in device memory.
void run_staged(const Call& call, void (*host_path)(const Call&));

// ---- NCCL (lib/nccl/) ----

/// True when mpidist was built with NCCL.
bool nccl_built() noexcept;
/// Creates the NCCL communicator if it does not exist yet (collective).
void start_nccl(const char* operation);
/// Runs `call` (device buffers) with NCCL on this rank's communicator, created on first use.
/// Without call.stream, returns when the result is ready (waiting at most MPIDIST_TIMEOUT).
void run_nccl(const Call& call);

}  // namespace mpidist::detail
