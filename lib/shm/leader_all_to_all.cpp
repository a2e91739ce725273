// The equal-block all_to_all across nodes through their leaders (P ranks, blocks of B bytes):
//   1. every rank posts its P blocks in the segment; each takes its node's blocks for it from the
//      others' halves, and the leader packs the blocks for the other nodes, node by node (for each
//      node k: its own node's ranks in local order, each one's blocks for k's ranks in k's order);
//   2. the leaders swap them (MPI_Alltoallv over Group::leaders), each receiving straight into
//      its half of the next step;
//   3. each rank copies its blocks from the other nodes out of its leader's half.
// Across the network one message goes each way between two leaders, where MPI's pairwise exchange
// sends one per pair of ranks on different nodes: at 3 + 1 three each way, all of them the lone
// rank's. The bytes are the same: L_j (P - L_j) B out of node j.
// Both steps go through single halves (or control lines): a rank's P blocks, and what a leader
// receives, must each fit one (leader_all_to_all_fits).
#include <cstddef>
#include <cstring>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/node_members.hpp"
#include "shm/segment.hpp"
#include "shm/through_leaders.hpp"

namespace mpidist::detail::shm {
namespace {

// Where a step's `bytes` from `rank` lie: its control line when they fit there, else its half.
std::byte* area(const Segment& seg, int rank, std::uint64_t step, std::size_t bytes) {
  return seg.payload(rank, step, bytes <= Segment::inline_bytes);
}

// What node `me`'s leader sends every node, in elements, with their offsets: alike what it receives
// from every node (node k's L_k ranks send L_me blocks each, as node me's L_me send L_k).
struct Plan {
  std::vector<int> counts, displs;
  Plan(const std::vector<std::vector<int>>& members, std::size_t me, std::size_t count)
      : counts(members.size(), 0), displs(members.size(), 0) {
    int offset = 0;
    for (std::size_t k = 0; k < members.size(); ++k) {
      counts[k] = k == me ? 0 : static_cast<int>(members[me].size() * members[k].size() * count);
      displs[k] = offset;
      offset += counts[k];
    }
  }
  std::size_t total() const { return static_cast<std::size_t>(displs.back() + counts.back()); }
};

}  // namespace

bool leader_all_to_all_fits(Group& group, std::size_t block, const char* operation) {
  const auto ranks = static_cast<std::size_t>(group.topology.size);
  if (ranks * block > Segment::half_bytes) return false;
  for (const auto& node : node_members(group, operation))
    if (node.size() * (ranks - node.size()) * block > Segment::half_bytes) return false;  // a leader's receipt
  return true;
}

void run_leader_all_to_all(const mpi::Exchange& e, const char* operation) {
  Group& group = *e.group;
  const std::size_t count = e.send_counts.empty() ? 0 : e.send_counts[0];
  const std::size_t block = count * size_of(e.dtype);
  if (block == 0) return;
  const auto ranks = static_cast<std::size_t>(e.size);
  const auto& members = node_members(group, operation);
  const auto node = static_cast<std::size_t>(group.topology.node_rank);
  const auto& here = members[node];
  const auto* in = static_cast<const std::byte*>(e.in);
  auto* out = static_cast<std::byte*>(e.out);
  const auto at = [&](int rank) { return static_cast<std::size_t>(rank) * block; };
  std::memcpy(out + at(e.rank), in + at(e.rank), block);
  // A rank alone on its node (the 1 of 3 + 1) needs no segment.
  Segment* seg = group.topology.local_size > 1 ? &segment(group, operation) : nullptr;
  const int local = seg ? seg->rank() : 0;
  const bool leader = group.leaders != MPI_COMM_NULL;
  const Plan plan(members, node, count);
  const std::size_t element = size_of(e.dtype);
  std::vector<std::byte> outgoing(leader ? plan.total() * element : 0);

  // 1. The node's blocks, and the leader's packing of the others'.
  std::uint64_t step = 0;
  if (seg) {
    step = seg->begin_step(operation);
    std::memcpy(area(*seg, local, step, ranks * block), in, ranks * block);
    seg->post(Segment::posted(step));
    seg->wait(Segment::posted(step), operation);
    for (int s = 0; s < seg->size(); ++s)
      if (s != local) std::memcpy(out + at(here[static_cast<std::size_t>(s)]), area(*seg, s, step, ranks * block) + at(e.rank), block);
  }
  if (leader) {
    std::byte* to = outgoing.data();
    for (std::size_t k = 0; k < members.size(); ++k) {
      if (k == node) continue;
      for (int s = 0; s < static_cast<int>(here.size()); ++s) {
        const std::byte* blocks = s == local ? in : area(*seg, s, step, ranks * block);
        for (const int d : members[k]) std::memcpy(to, blocks + at(d), block), to += block;
      }
    }
  }

  // 2. The leaders' swap, into the leader's half (or a buffer of its own where it is alone).
  const std::size_t received = plan.total() * element;  // alike on the node: its leader's receipt
  std::vector<std::byte> alone(seg ? 0 : received);
  std::byte* incoming = alone.data();
  if (seg) {
    step = seg->begin_step(operation);
    incoming = area(*seg, 0, step, received);
  }
  if (leader) {
    const MPI_Datatype type = mpi::datatype(e.dtype);
    MPIDIST_MPI_CHECK(MPI_Alltoallv(outgoing.data(), plan.counts.data(), plan.displs.data(), type, incoming,
                                    plan.counts.data(), plan.displs.data(), type, group.leaders));
  }

  // 3. This rank's blocks from the other nodes: from node k, rank s's block for local rank d at
  //    (s's place in k, then d) in k's part.
  if (seg) {
    if (leader) {
      seg->post(Segment::finished(step));
    } else {
      seg->post(Segment::posted(step));
      seg->wait(Segment::finished(step), operation, 0);
    }
  }
  for (std::size_t k = 0; k < members.size(); ++k) {
    if (k == node) continue;
    const std::byte* part = incoming + static_cast<std::size_t>(plan.displs[k]) * element;
    for (std::size_t s = 0; s < members[k].size(); ++s)
      std::memcpy(out + at(members[k][s]), part + (s * here.size() + static_cast<std::size_t>(local)) * block, block);
  }
}

}  // namespace mpidist::detail::shm
