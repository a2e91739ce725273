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

/// mpi::exchange_split through the segment: the ranks' standing travels in the first step's lines.
/// A Host rank passes its exchange `e` and, when every rank is Host, the blocks move as exchange(e)
/// moves them. Collective over the group.
mpi::Split exchange_split(Group& group, const mpi::Exchange* e, mpi::Standing mine, std::string_view failure,
                          const char* operation);

}  // namespace mpidist::detail::shm
