// The seam between the core library and its CUDA / NCCL parts. Implemented by lib/cuda/ and
// lib/nccl/ when those are built, and by lib/no_cuda.cpp / lib/no_nccl.cpp otherwise, so that no
// core file needs an #if. No CUDA or NCCL type appears here. Internal.
#pragma once

#include <cstddef>
#include <span>

#include "collective_call.hpp"
#include "mpidist/device.hpp"
#include "mpidist/tensor.hpp"

namespace mpidist::detail {

class Group;

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

/// Runs `call`, whose buffers are in device memory, by copying them through the group's pinned host
/// buffer and calling `host_path` on the host copies. Ordered after earlier work on call.stream;
/// returns when the result is back in device memory.
void run_staged(const Call& call, void (*host_path)(const Call&));

/// Copies `bytes` of device memory on `device`, queued on `stream` (without one: done on return).
void copy_device_memory(const char* operation, void* to, const void* from, std::size_t bytes, int device,
                        Stream stream);

// ---- NCCL (lib/nccl/) ----

/// True when mpidist was built with NCCL.
bool nccl_built() noexcept;
/// Creates the group's NCCL communicator if it does not exist yet (collective over the group).
void start_nccl(Group& group, const char* operation);
/// Runs `call` (device buffers) with NCCL on the group's communicator, created on first use.
/// Without call.stream, returns when the result is ready (waiting at most MPIDIST_TIMEOUT).
void run_nccl(const Call& call);
/// Runs `calls` (device all-reduces of one group, one stream) between one ncclGroupStart and
/// ncclGroupEnd, so NCCL launches them as one unit; then waits as run_nccl does.
void run_nccl_many(std::span<const Call> calls);
/// Collective over `parent`, right after its MPI split: where the parent has an NCCL communicator,
/// the child's (null on ranks left out) is split from it with ncclCommSplit instead of being
/// bootstrapped anew at its first device collective.
void split_device_communicator(Group& parent, Group* child, int color, int key);

}  // namespace mpidist::detail
