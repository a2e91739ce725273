// Host collectives across nodes through the nodes' leaders (local rank 0 of each node): MPI between
// the leaders, the node's segment inside each node. The broadcast (lib/shm/hierarchical_broadcast.cpp),
// the all-gather and reduce-scatter of nodes of any size (lib/shm/leader_all_gather.cpp,
// lib/shm/leader_reduce_scatter.cpp), and the all_to_all of equal blocks (lib/shm/leader_all_to_all.cpp).
// Internal.
#pragma once

#include <cstddef>

#include "core/collective_call.hpp"
#include "mpi/uneven_collectives.hpp"

namespace mpidist::detail::shm {

/// Runs `call` (a host broadcast on a group spanning nodes). Collective over the group.
void run_hierarchical_broadcast(const Call& call);

/// Runs `call` (a host all_gather on a group spanning nodes, whose whole output, in elements, fits
/// mpi::max_count()). Collective over the group.
void run_leader_all_gather(const Call& call);

/// Runs `call` (a host reduce_scatter on a group spanning nodes, whose whole input, in elements,
/// fits mpi::max_count()). Collective over the group.
void run_leader_reduce_scatter(const Call& call);

/// Whether exchange `e` (all_to_all of equal blocks on a group spanning nodes) goes through the
/// nodes' leaders: forced by MPIDIST_HOST_ALLREDUCE=shm or 2d, under auto across real hosts where
/// some node holds more than one of the group's ranks, for small messages; only where its steps fit
/// the segment's halves (leader_all_to_all_fits). Alike on every rank.
bool leader_all_to_all(const mpi::Exchange& e, const char* operation);

/// Whether a rank's blocks (P of `block` bytes), and what any node's leader receives from the other
/// nodes, each fit one segment half.
bool leader_all_to_all_fits(Group& group, std::size_t block, const char* operation);

/// Runs `e` through the nodes' leaders (where leader_all_to_all(e) holds). Collective over the group.
void run_leader_all_to_all(const mpi::Exchange& e, const char* operation);

}  // namespace mpidist::detail::shm
