// The reduce-scatter across nodes through their leaders, for nodes of any size (3 + 1, where the 2D
// reduce-scatter cannot slice), B bytes a block, N = P B in on every rank:
//   1. each node's ranks reduce their whole inputs into the leader through the segment (every rank
//      sums a slice; shm::reduce_to_rank);
//   2. the leaders reduce-scatter the node sums among themselves (MPI_Reduce_scatter over
//      Group::leaders, node j's leader getting its L_j blocks; in place, from the node sum packed in
//      node order where the nodes' ranks are not consecutive in the group);
//   3. each leader hands its node's ranks their blocks through the segment (shm::scatter_from_rank).
// Across the network node j sends the other nodes' (P - L_j) B and receives its L_j B from each other
// node, one message each way between two leaders. At 3 + 1 host A sends B and receives 3 B; Open
// MPI's reduce-scatter of 4 ranks (recursive halving) sends 3 B each way, in two steps one after the
// other for the lone rank.
// Order of the sums: within a node by local rank, then MPI's among the leaders: never timing's.
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/node_members.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"
#include "shm/through_leaders.hpp"

namespace mpidist::detail::shm {
namespace {

// Step 2 on a leader: `sums` (the node's sum of all P blocks, in group order) reduce-scattered among
// the leaders; this node's blocks, in its local rank order, land at the start of the returned buffer
// (`sums` itself where the nodes are consecutive).
std::byte* leaders_reduce_scatter(const Call& call, MPI_Comm leaders, const std::vector<std::vector<int>>& members,
                                  std::byte* sums, std::unique_ptr<std::byte[]>& packed) {
  const std::size_t element = size_of(call.dtype), block = call.count * element;
  std::vector<int> counts(members.size());
  for (std::size_t j = 0; j < members.size(); ++j) counts[j] = static_cast<int>(members[j].size() * call.count);
  std::byte* data = sums;
  if (!consecutive_nodes(members)) {
    packed = std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(call.size) * block);
    std::byte* at = packed.get();
    for (const auto& node : members)
      for (const int r : node) std::memcpy(at, sums + static_cast<std::size_t>(r) * block, block), at += block;
    data = packed.get();
  }
  MPIDIST_MPI_CHECK(MPI_Reduce_scatter(MPI_IN_PLACE, data, counts.data(), mpi::datatype(call.dtype),
                                       mpi::reduction(call.op, call.dtype), leaders));
  return data;
}

}  // namespace

void run_leader_reduce_scatter(const Call& call) {
  Group& group = *call.group;
  const std::size_t element = size_of(call.dtype), block = call.count * element;
  if (block == 0) return;
  const std::size_t total = block * static_cast<std::size_t>(call.size);
  const auto& members = node_members(group, call.name);
  const auto node = static_cast<std::size_t>(group.topology.node_rank);
  // A rank alone on its node (the 1 of 3 + 1) needs no segment.
  Segment* seg = group.topology.local_size > 1 ? &segment(group, call.name) : nullptr;
  const bool leader = group.leaders != MPI_COMM_NULL;
  // The node's sum of every block, on the leader: its scratch (MPI's in-place reduce-scatter
  // overwrites it), a copy of the input where the leader is alone on its node.
  std::unique_ptr<std::byte[]> sums, packed;
  if (leader) sums = std::make_unique_for_overwrite<std::byte[]>(total);
  // Inside the node a plain sum (or min, ...); the average is taken once, by the leader.
  if (seg) reduce_to_rank(*seg, call.name, Piece{call.in, sums.get(), total}, reduction_of(call.dtype, call.op, 0), 0);
  else std::memcpy(sums.get(), call.in, total);
  std::byte* mine = nullptr;  // on the leader: the node's blocks, reduced over the group
  if (leader) {
    mine = leaders_reduce_scatter(call, group.leaders, members, sums.get(), packed);
    if (call.op == ReduceOp::Avg) mpi::divide(mine, members[node].size() * call.count, call.dtype, call.size);
  }
  if (seg) scatter_from_rank(*seg, call.name, mine, block, call.out, 0);
  else std::memcpy(call.out, mine, block);
}

}  // namespace mpidist::detail::shm
