// The broadcast across nodes: the root's message crosses the network once per other node, between
// node leaders (local rank 0), and each node passes it on through its segment. In pieces of 1 MiB,
// so that a node's ranks copy one piece out of the segment while its leader moves the next:
//   - root a leader: the leaders' MPI_Bcast from the root's node, then every node's segment from its
//     leader;
//   - root not a leader: the root sends each piece to the other nodes' leaders itself while its
//     node's segment passes it on, and they pass it on through theirs (with more than two nodes,
//     from 1 MiB: the root's node's segment first, then its leader relays it over MPI_Bcast).
// Across hosts a binomial tree over all ranks (Open MPI's and MPICH's small-message broadcast)
// crosses the network wherever the tree's edges do: at 2 + 2 once from root 0 (0 -> 2, then 0 -> 1
// and 2 -> 3 inside the hosts), but three times from root 1, two of them one after the other. Here
// the message crosses once per other node from any root, and no rank waits behind more than one
// network hop.
#include "shm/hierarchical_broadcast.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"

namespace mpidist::detail::shm {
namespace {

constexpr std::size_t piece_bytes = std::size_t{1} << 20;
// A root that is not its node's leader sends to the other nodes' leaders itself, on the group's
// control channel with a tag of its own (the channel's other tags: 7295-7300), while its node's
// segment passes the message to its own node: where ranks share cores, going through its leader
// first cost a context switch (1.24 x MPI at 4-256 B at 3 + 1 from root 1, both hosts on both
// cores). With more than two nodes, from 1 MiB, the root's leader relays it over MPI_Bcast's tree.
constexpr int from_root_tag = 7294;
constexpr std::size_t direct_below = std::size_t{1} << 20;

int node_of(const Group& group, int r) {
  const auto& placement = context("broadcast").topology.ranks;
  return placement[static_cast<std::size_t>(group.world_ranks[static_cast<std::size_t>(r)])].node_rank;
}

// Group rank `root`'s node (its leader's rank on Group::leaders) and local rank, as group.cpp
// numbers them: a node is the world's node of its ranks, its local ranks in group order, and nodes
// in the order of their leaders (the lowest group rank of each). From the placement table every
// rank holds: the same on every rank, with no message.
std::pair<int, int> node_and_local_rank(const Group& group, int root) {
  const int root_node = node_of(group, root);
  std::vector<int> leaders_before;  // the nodes whose first rank comes before the root node's
  int local = 0;
  bool found = false;
  for (int r = 0; r < root; ++r) {
    const int node = node_of(group, r);
    if (node == root_node) found = true, ++local;
    else if (!found && std::find(leaders_before.begin(), leaders_before.end(), node) == leaders_before.end())
      leaders_before.push_back(node);
  }
  return {static_cast<int>(leaders_before.size()), local};
}

// The group ranks of the other nodes' leaders: the first rank of every node but `root`'s.
std::vector<int> other_leaders(const Group& group, int root) {
  std::vector<int> nodes{node_of(group, root)}, leaders;
  for (int r = 0; r < group.topology.size; ++r)
    if (const int node = node_of(group, r); std::find(nodes.begin(), nodes.end(), node) == nodes.end()) {
      nodes.push_back(node);
      leaders.push_back(r);
    }
  return leaders;
}

}  // namespace

void run_hierarchical_broadcast(const Call& call) {
  Group& group = *call.group;
  const std::size_t element = size_of(call.dtype);
  const std::size_t bytes = call.count * element;
  if (bytes == 0) return;
  // A rank alone on its node (the 1 of 3 + 1) needs no segment.
  Segment* seg = group.topology.local_size > 1 ? &segment(group, call.name) : nullptr;
  const auto [root_node, root_local] = node_and_local_rank(group, call.root);
  const bool root_node_here = group.topology.node_rank == root_node;
  const bool leader = group.leaders != MPI_COMM_NULL;
  const bool direct = root_local != 0 && (group.topology.num_nodes == 2 || bytes < direct_below);
  const std::vector<int> to = direct && call.rank == call.root ? other_leaders(group, call.root) : std::vector<int>{};
  const MPI_Datatype type = mpi::datatype(call.dtype);
  auto* data = static_cast<std::byte*>(call.out);
  const std::size_t piece = std::max(element, piece_bytes / element * element);
  for (std::size_t first = 0; first < bytes; first += piece) {
    const std::size_t n = std::min(piece, bytes - first);
    const int count = static_cast<int>(n / element);
    const auto node = [&](int from) {
      if (seg) broadcast_from_rank(*seg, call.name, data + first, n, from);
    };
    if (direct) {
      std::vector<MPI_Request> sends(to.size(), MPI_REQUEST_NULL);
      for (std::size_t j = 0; j < to.size(); ++j)
        MPIDIST_MPI_CHECK(MPI_Isend(data + first, count, type, to[j], from_root_tag, group.control, &sends[j]));
      if (leader && !root_node_here)
        MPIDIST_MPI_CHECK(MPI_Recv(data + first, count, type, call.root, from_root_tag, group.control, MPI_STATUS_IGNORE));
      node(root_node_here ? root_local : 0);
      if (!sends.empty())
        MPIDIST_MPI_CHECK(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE));
      continue;
    }
    const auto network = [&] {
      if (leader) MPIDIST_MPI_CHECK(MPI_Bcast(data + first, count, type, root_node, group.leaders));
    };
    if (root_node_here && root_local != 0) {
      node(root_local);
      network();
    } else {
      network();
      node(0);
    }
  }
}

}  // namespace mpidist::detail::shm
