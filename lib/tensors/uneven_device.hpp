// The uneven collectives (all_to_all, all_gather_v, gather, scatter) on device memory: one NCCL
// group of sends and receives, or (MPIDIST_BACKEND=mpi) the host path on host copies. Internal.
#pragma once

#include <memory>

#include "mpi/uneven_collectives.hpp"
#include "mpidist/collectives.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail {

/// Moves the blocks of `e`, whose buffers are on `device` (-1 on a rank with no elements to send
/// or receive, which still takes part: the others chose the device path). Every rank of the group
/// calls it alike. With `stream` queued on it (NCCL) or ordered after it (staged); without one,
/// ordered after the caller's work on the legacy default stream and done on return, waiting at
/// most the group's timeout.
void exchange_on_device(const mpi::Exchange& e, int device, Stream stream, const char* name);

/// The same, started: through NCCL the batch is queued (on `stream`, or on the group's stream after
/// the legacy default stream) and the returned Work waits for it under the group's timeout (done at
/// once with a stream), as the other non-blocking device collectives' Work does. Staged, the
/// exchange is done on return, and so is the Work (null).
std::unique_ptr<WorkState> start_exchange_on_device(const mpi::Exchange& e, int device, Stream stream,
                                                    const char* name);

/// The same exchange inside one rank (a group of one): the block to itself as a device copy.
void copy_own_block(const mpi::Exchange& e, int device, Stream stream, const char* name);

}  // namespace mpidist::detail
