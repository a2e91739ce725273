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
#include "shm/through_leaders.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/node_members.hpp"
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

}  // namespace

void run_hierarchical_broadcast(const Call& call) {
  Group& group = *call.group;
  const std::size_t element = size_of(call.dtype);
  const std::size_t bytes = call.count * element;
  if (bytes == 0) return;
  // A rank alone on its node (the 1 of 3 + 1) needs no segment.
  Segment* seg = group.topology.local_size > 1 ? &segment(group, call.name) : nullptr;
  const auto& members = node_members(group, call.name);
  const int root_node = node_holding(members, call.root);
  const auto& root_members = members[static_cast<std::size_t>(root_node)];
  const auto root_local = static_cast<int>(std::find(root_members.begin(), root_members.end(), call.root) - root_members.begin());
  const bool root_node_here = group.topology.node_rank == root_node;
  const bool leader = group.leaders != MPI_COMM_NULL;
  const bool direct = root_local != 0 && (group.topology.num_nodes == 2 || bytes < direct_below);
  std::vector<int> to;  // the other nodes' leaders, where this rank is a root that sends them itself
  if (direct && call.rank == call.root)
    for (std::size_t j = 0; j < members.size(); ++j)
      if (static_cast<int>(j) != root_node) to.push_back(members[j].front());
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
