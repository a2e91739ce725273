// The 2D hierarchical collectives across nodes of equal size: the all-reduce (lib/shm/two_level.cpp),
// the all-gather (lib/shm/two_level_all_gather.cpp) and the reduce-scatter
// (lib/shm/two_level_reduce_scatter.cpp). Internal.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>

#include "core/collective_call.hpp"
#include "core/group.hpp"

namespace mpidist::detail::shm {

/// The ranks of this rank's local index on every node (Group::across), ordered by group rank, with
/// Group::grid and Group::node_across; made at the first call and kept. Collective over the group.
MPI_Comm across(Group& group);

/// The group's buffer for data on the network (Group::across_buffer), of at least `bytes`. A
/// collective request cannot be cancelled: what one that a timeout leaves pending may still write
/// must not be the caller's memory.
std::byte* wire_buffer(Group& group, std::size_t bytes);

/// Hands Group::across_buffer to finalize() if the scope is left (an Error) while `pending()`:
/// a late peer's data may still arrive there. The group takes a new buffer at its next call.
class KeepWireIfPending {
 public:
  /// `pending` outlives the guard.
  KeepWireIfPending(Group& group, const std::function<bool()>& pending) noexcept : group_(group), pending_(pending) {}
  ~KeepWireIfPending();
  KeepWireIfPending(const KeepWireIfPending&) = delete;
  KeepWireIfPending& operator=(const KeepWireIfPending&) = delete;

 private:
  Group& group_;
  const std::function<bool()>& pending_;
};

/// Runs `call` (a host all_reduce on a group whose nodes all hold the same number, more than one,
/// of its ranks): reduce-scatter in each node's segment, an all-reduce of each local rank's slice
/// with the same local rank of the other nodes, an all-gather in the segment; pipelined in chunks.
/// Collective over the group; the first call also splits the group's `across` communicator.
void run_two_level(const Call& call);

/// Runs `call` (a host all_gather on a group whose nodes all hold the same number, more than one,
/// of its ranks): every rank sends its block to the ranks of its local index on the other nodes
/// while the node gathers its own blocks in the segment, then the node's ranks swap what they
/// received through the segment. Collective over the group.
void run_two_level_all_gather(const Call& call);

/// Runs `call` (a host reduce_scatter on a group like run_two_level's): piece by piece, a
/// reduce-scatter in the node's segment gives each rank the node's sums of its counterparts' blocks,
/// and an MPI reduce-scatter among the counterparts gives each its own block. Collective over the group.
void run_two_level_reduce_scatter(const Call& call);

}  // namespace mpidist::detail::shm
