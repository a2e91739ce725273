// The seam between the core library and its CUDA / NCCL parts. Implemented by lib/cuda/ and
// lib/nccl/ when those are built, and by lib/cuda/no_cuda.cpp / lib/nccl/no_nccl.cpp otherwise, so that no
// core file needs an #if. No CUDA or NCCL type appears here. Internal.
#pragma once

#include <cstddef>
#include <span>

#include <memory>

#include "core/collective_call.hpp"
#include "mpidist/device.hpp"
#include "mpidist/tensor.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail {

class Group;

// ---- CUDA runtime (lib/cuda/) ----

/// Where `data` lives (host for nullptr, for unregistered memory and without CUDA). Makes this
/// rank's device current on the calling thread first (make_rank_device_current), so the query
/// never creates a context on device 0; managed memory is reported on this rank's device. A CUDA
/// error of the query is an Error, never "host memory".
struct MemoryLocation {
  MemoryKind kind = MemoryKind::Host;
  int device = -1;
};
MemoryLocation locate_memory(const void* data);

/// Makes local_rank % device count current on the calling thread (no-op without a device), so that
/// every later CUDA call of mpidist on this thread works on this rank's device. Called by
/// initialize() before any other CUDA call that needs a context; never throws (a failure shows at
/// the first device use, as an Error there).
void make_rank_device_current(int local_rank) noexcept;

/// Number of visible CUDA devices; 0 without CUDA, without a driver, or on any error. Cached.
int cuda_device_count() noexcept;

/// The CUDA device this rank uses (local_rank % device count, as device() picks it), -1 without one.
int rank_device(int local_rank) noexcept;

/// Makes sure all work queued on `stream` so far has finished; without a stream, all work queued
/// so far on the legacy default stream of `device` (and so on every blocking stream). For paths
/// whose data is read by the host (CUDA-aware MPI).
void synchronize_stream(const char* operation, Stream stream, int device);

/// Runs `call`, whose buffers are in device memory, by copying them through the group's pinned host
/// buffer and calling `host_path` on the host copies. Ordered after earlier work on call.stream, or
/// without one after the caller's work on the legacy default stream; returns when the result is
/// back in device memory. A CUDA failure breaks the group.
void run_staged(const Call& call, void (*host_path)(const Call&));

/// Copies `bytes` from or to device memory on `device` (the other side may be host memory: staged
/// point-to-point), queued on `stream` (without one: ordered after the legacy default stream, done
/// on return).
void copy_device_memory(const char* operation, void* to, const void* from, std::size_t bytes, int device,
                        Stream stream);

// ---- NCCL (lib/nccl/) ----

/// True when mpidist was built with NCCL.
bool nccl_built() noexcept;
/// Creates the group's NCCL communicator if it does not exist yet (collective over the group).
/// Every group's communicator is made this way, lazily: a split() group that never touches device
/// memory has none, and a child's failure aborts only the child's.
void start_nccl(Group& group, const char* operation);
/// Runs `call` (device buffers) with NCCL on the group's communicator, created on first use.
/// Without call.stream, ordered after the legacy default stream and returns when the result is
/// ready (waiting at most MPIDIST_TIMEOUT). Any NCCL or CUDA failure aborts the communicator and
/// breaks the group.
void run_nccl(const Call& call);
/// Runs `calls` (device all-reduces of one group, one stream) between one ncclGroupStart and
/// ncclGroupEnd, so NCCL launches them as one unit; then waits as run_nccl does.
void run_nccl_many(std::span<const Call> calls);

/// Starts `calls` (device collectives of one group and one stream: one call, or an
/// all_reduce_many's list) without waiting for them: queued on the group's stream after the work
/// queued so far on call.stream (without one, on the legacy default stream), launched as one unit.
/// The Work's test() polls an event recorded after them; its wait() blocks the host until they are
/// done (under the group's timeout) without a stream, and with one makes call.stream wait for the
/// event and returns at once. A failure aborts the communicator and breaks the group.
std::unique_ptr<WorkState> start_nccl_many(std::span<const Call> calls);

/// One device send or receive of a point-to-point batch (send and recv are batches of one).
struct DeviceMessage {
  bool receiving;
  void* data;
  std::size_t count;
  DataType dtype;
  int peer;  // a rank of the group, never any_source: NCCL has no wildcard
};

/// Queues `messages` with NCCL between one ncclGroupStart and ncclGroupEnd on `stream` (without
/// one: the group's stream, after the legacy default stream). The Work is done at once with a
/// stream; without, it waits for the batch under the group's timeout. NCCL has no tags: messages
/// between two ranks match in the order they were issued. A failure aborts the communicator.
std::unique_ptr<WorkState> start_nccl_p2p(Group& group, const char* operation,
                                          std::span<const DeviceMessage> messages, Stream stream);

}  // namespace mpidist::detail
