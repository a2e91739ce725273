// The all-gather across nodes through their leaders, for nodes of any size (3 + 1, where the 2D
// all-gather cannot slice), B bytes a rank:
//   1. each node's ranks post their blocks in the segment, and the leader copies them into its
//      output;
//   2. the leaders gather their nodes' blocks from one another (MPI_Allgatherv over
//      Group::leaders; in place where every node's ranks are consecutive in the group, else through
//      a packed buffer);
//   3. the leader's whole output goes to its node's other ranks through the segment.
// Across the network node j sends its L_j B to every other leader. At 3 + 1 host A sends 3 B and
// host B 1 B; Open MPI's all-gather of 4 ranks (recursive doubling) sends 3 B each way, two steps
// one after the other across the hosts for the lone rank.
#include <algorithm>
#include <cstddef>
#include <cstring>
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

// Step 1: every local rank's block into the leader's `out` at its group rank's place, a half (or
// control line) at a time. Only the leader waits; the next step's rule-2 wait keeps the halves safe.
void gather_to_leader(Segment& seg, const char* operation, std::byte* out, std::size_t block,
                      const std::vector<int>& node) {
  const bool in_line = block <= Segment::inline_bytes;
  const std::size_t piece = in_line ? block : Segment::half_bytes;
  const std::byte* own = out + static_cast<std::size_t>(node[static_cast<std::size_t>(seg.rank())]) * block;
  for (std::size_t first = 0; first < block; first += piece) {
    const std::size_t length = std::min(piece, block - first);
    const std::uint64_t step = seg.begin_step(operation);
    if (seg.rank() != 0)
      std::memcpy(seg.payload(seg.rank(), step, in_line), own + first, length);
    seg.post(Segment::posted(step));
    if (seg.rank() != 0) continue;
    seg.wait(Segment::posted(step), operation);
    for (int l = 1; l < seg.size(); ++l) {
      const std::byte* from = seg.payload(l, step, in_line);
      std::memcpy(out + static_cast<std::size_t>(node[static_cast<std::size_t>(l)]) * block + first, from, length);
    }
  }
}

// Step 2 on a leader: every node's blocks from its leader, into `out` at their group ranks' places.
void leaders_exchange(const Call& call, MPI_Comm leaders, const std::vector<std::vector<int>>& members, int me) {
  const std::size_t element = size_of(call.dtype), block = call.count * element;
  auto* out = static_cast<std::byte*>(call.out);
  const auto nodes = members.size();
  std::vector<int> counts(nodes), displs(nodes);
  int at = 0;
  for (std::size_t j = 0; j < nodes; ++j) {
    counts[j] = static_cast<int>(members[j].size() * call.count);
    displs[j] = at;
    at += counts[j];
  }
  const MPI_Datatype type = mpi::datatype(call.dtype);
  if (consecutive_nodes(members)) {
    MPIDIST_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, type, out, counts.data(), displs.data(), type, leaders));
    return;
  }
  std::vector<std::byte> packed(static_cast<std::size_t>(at) * element);
  const auto place = [&](std::size_t j, std::size_t l) { return packed.data() + static_cast<std::size_t>(displs[j]) * element + l * block; };
  const auto mine = static_cast<std::size_t>(me);
  for (std::size_t l = 0; l < members[mine].size(); ++l)
    std::memcpy(place(mine, l), out + static_cast<std::size_t>(members[mine][l]) * block, block);
  MPIDIST_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, type, packed.data(), counts.data(), displs.data(), type, leaders));
  for (std::size_t j = 0; j < nodes; ++j)
    if (j != mine)
      for (std::size_t l = 0; l < members[j].size(); ++l)
        std::memcpy(out + static_cast<std::size_t>(members[j][l]) * block, place(j, l), block);
}

}  // namespace

void run_leader_all_gather(const Call& call) {
  Group& group = *call.group;
  const std::size_t block = call.count * size_of(call.dtype);
  if (block == 0) return;
  auto* out = static_cast<std::byte*>(call.out);
  std::byte* own = out + static_cast<std::size_t>(call.rank) * block;
  if (call.in != own) std::memcpy(own, call.in, block);
  const auto& members = node_members(group, call.name);
  const int node = group.topology.node_rank;
  // A rank alone on its node (the 1 of 3 + 1) needs no segment.
  Segment* seg = group.topology.local_size > 1 ? &segment(group, call.name) : nullptr;
  if (seg) gather_to_leader(*seg, call.name, out, block, members[static_cast<std::size_t>(node)]);
  if (group.leaders != MPI_COMM_NULL) leaders_exchange(call, group.leaders, members, node);
  if (seg) broadcast_from_rank(*seg, call.name, out, block * static_cast<std::size_t>(call.size), 0);
}

}  // namespace mpidist::detail::shm
