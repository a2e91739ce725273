// all_to_all (equal and uneven), all_gather_v, gather and scatter of host memory through the
// node's segment (shm/segment.hpp), for groups whose ranks share one node. Internal.
#pragma once

#include <string>
#include <string_view>

#include "mpi/uneven_collectives.hpp"

namespace mpidist::detail::shm {

/// Whether exchanges on `group` go through the segment: every rank on one node, at most
/// `exchange_max_ranks` of them, and MPIDIST_HOST_ALLREDUCE not `mpi`. Alike on every rank.
bool takes_exchange(const Group& group, const char* operation);

/// Whether exchange(e) will make no MPI call (given a segment already made): every rank knows the
/// plan (all but all_to_all's splits) and no rank sends more than the segment keeps. Alike on every
/// rank; the non-blocking calls then run it on the communicator's lane at any thread level.
bool exchange_without_mpi(const mpi::Exchange& e, const char* operation);

/// Moves `e`'s blocks through the segment, or through MPI (mpi::exchange) when some rank sends more
/// than the segment beats MPI at: the ranks learn each other's totals in the first step and decide
/// alike. Collective over the group.
void exchange(const mpi::Exchange& e, const char* operation);

/// Where a rank stands in all_to_all's splits, as its line in the first step tells the others:
/// it sends and receives host memory (or nothing), it holds device memory, or its own checks of
/// the call failed.
enum class Standing : unsigned char { Host = 0, Device = 1, Failed = 2 };

/// What the first step told every rank, alike: the exchange went on and is done; or nothing was
/// exchanged, because some rank holds device memory, or `failed` ranks failed their checks (the
/// lowest, `first_failed`, with its Error's text).
struct Split {
  enum Kind { Exchanged, OnDevice, Failed } kind = Exchanged;
  int failed = 0;
  int first_failed = -1;
  std::string failure;
};

/// all_to_all's splits where a rank cannot tell the call's path from its own buffers (a job with
/// a GPU: a rank with no elements follows the others to NCCL or the segment), with the ranks'
/// standing carried in the first step instead of a vote of its own. A Host rank passes its
/// exchange `e` and, when every rank is Host, moves the blocks as exchange(e) does; a Device or
/// Failed rank passes null (and a Failed one its Error's text). Collective over the group.
Split exchange_split(Group& group, const mpi::Exchange* e, Standing mine, std::string_view failure,
                     const char* operation);

}  // namespace mpidist::detail::shm
