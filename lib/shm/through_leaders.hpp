// Host collectives across nodes through the nodes' leaders (local rank 0 of each node): MPI between
// the leaders, the node's segment inside each node. The broadcast (lib/shm/hierarchical_broadcast.cpp)
// and the all-gather and reduce-scatter of nodes of any size (lib/shm/leader_all_gather.cpp,
// lib/shm/leader_reduce_scatter.cpp). Internal.
#pragma once

#include "core/collective_call.hpp"

namespace mpidist::detail::shm {

/// Runs `call` (a host broadcast on a group spanning nodes). Collective over the group.
void run_hierarchical_broadcast(const Call& call);

/// Runs `call` (a host all_gather on a group spanning nodes, whose whole output, in elements, fits
/// mpi::max_count()). Collective over the group.
void run_leader_all_gather(const Call& call);

/// Runs `call` (a host reduce_scatter on a group spanning nodes, whose whole input, in elements,
/// fits mpi::max_count()). Collective over the group.
void run_leader_reduce_scatter(const Call& call);

}  // namespace mpidist::detail::shm
