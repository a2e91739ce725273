// The 2D all-gather across nodes that hold the same number L > 1 of the group's ranks (M nodes,
// P = L M ranks, blocks of B bytes, N = P B gathered). Per piece [f, f + n) of the blocks:
//   1. every rank sends piece f of its own block to its counterparts (the ranks of its local index
//      on the other nodes, over `across`) and receives theirs, from and into a slot of the group's
//      buffer (PieceRing: a request that a timeout leaves pending never touches the caller's
//      memory);
//   2. once they are in, a step in the node's segment: every rank posts its M pieces (its own and
//      its counterparts', `across` order), then copies every other local rank's to their places.
// Up to four pieces are on the network while the node gathers the older ones (PieceRing). A piece
// of at most 32 KiB leaves at once, under TCP's eager limit: whole blocks through MPI_Iallgather (a
// 64 KiB block a rendezvous) measured 0.88-1.27 x MPI_Allgather at 256 KiB gathered at 2 + 2.
// Across the network a host sends L (M - 1) B = (M - 1) N / M: N / 2 at 2 + 2, where Open MPI's
// all-gather at 4 ranks sends N (the veth's counts).
#include <algorithm>
#include <cstring>

#include "core/group.hpp"
#include "shm/segment.hpp"
#include "shm/two_level.hpp"

namespace mpidist::detail::shm {

void run_two_level_all_gather(const Call& call) {
  Group& group = *call.group;
  const char* operation = call.name;
  Segment& seg = segment(group, operation);
  across(group, operation);  // at the group's first 2D call, with Group::grid and Group::node_across
  const int nodes = group.topology.num_nodes, me = seg.rank();
  const std::size_t block = call.count * size_of(call.dtype);
  auto* out = static_cast<std::byte*>(call.out);
  // Block of local rank l's counterpart on `across` rank j, in the output.
  const auto place = [&](int l, int j) {
    return out + static_cast<std::size_t>(group.grid[static_cast<std::size_t>(l * nodes + j)]) * block;
  };
  const int mine = group.node_across[static_cast<std::size_t>(me)];  // this rank's place in `across`
  std::byte* own = place(me, mine);
  if (call.in != own) std::memcpy(own, call.in, block);

  // A multiple of 64 bytes that M of fit a half.
  const std::size_t piece =
      std::min(PieceRing::piece_limit, Segment::half_bytes / static_cast<std::size_t>(nodes)) / 64 * 64;
  // A slot: this rank's piece, sent, then the M - 1 received, in `across` order.
  PieceRing ring(group, seg, static_cast<std::size_t>(nodes) * piece);
  const auto received = [&](const PieceRing::Piece& p, int j) {
    return p.slot + static_cast<std::size_t>(j < mine ? j + 1 : j) * piece;
  };
  // 2. Piece f of every block on the node, once this rank's counterparts' are in.
  const auto finish = [&] {
    const PieceRing::Piece& p =
        ring.finish(operation, "the ranks of the same local rank on the other nodes (the 2D all-gather's cross-node step)");
    const std::uint64_t step = seg.begin_step(operation);
    std::byte* half = seg.half(me, step);
    for (int j = 0; j < nodes; ++j) {
      const std::byte* from = j == mine ? own + p.first : received(p, j);
      std::memcpy(half + static_cast<std::size_t>(j) * piece, from, p.bytes);
      if (j != mine) std::memcpy(place(me, j) + p.first, from, p.bytes);
    }
    seg.post(Segment::posted(step));
    seg.wait(Segment::posted(step), operation);
    for (int r = 0; r < seg.size(); ++r)
      if (r != me)
        for (int j = 0; j < nodes; ++j)
          std::memcpy(place(r, j) + p.first, seg.half(r, step) + static_cast<std::size_t>(j) * piece, p.bytes);
  };

  for (std::size_t first = 0; first < block; first += piece) {
    if (ring.full()) finish();
    // 1. This rank's piece to its counterparts, theirs back.
    PieceRing::Piece& p = ring.start(first, std::min(piece, block - first));
    std::memcpy(p.slot, own + first, p.bytes);
    ring.swap(p, mine, nodes, static_cast<int>(p.bytes), MPI_BYTE, [&](int) { return p.slot; },
              [&](int j) { return received(p, j); });
    ring.test_oldest();
  }
  while (!ring.empty()) finish();
}

}  // namespace mpidist::detail::shm
