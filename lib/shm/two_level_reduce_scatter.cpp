// The 2D reduce-scatter across nodes that hold the same number L > 1 of the group's ranks (M nodes,
// P = L M ranks, blocks of B bytes, N = P B in on every rank). Per piece [f, f + n) of the blocks:
//   1. a reduce-scatter in the node's segment: every rank copies piece f of all P blocks of its
//      input into its half; local rank l sums, over the node's ranks in local rank order, the
//      pieces of the M blocks whose ranks have its local index (its counterparts on every node,
//      `across` order) into a slot of the group's buffer (PieceRing: a request that a timeout
//      leaves pending never writes the caller's memory);
//   2. each sum goes to the counterpart whose block it is (MPI_Isend over `across`), and the
//      counterparts' sums of this rank's block come back (MPI_Irecv): one exchange, where
//      MPI_Ireduce_scatter_block among the counterparts (Open MPI's libnbc, in more than one
//      round) measured 1.2-1.7 x MPI_Reduce_scatter_block below 256 KiB at 2 + 2;
//   3. once they are in, the M sums of its block reduced in `across` order into the output (the
//      average divided there).
// Up to four pieces are on the network while the node reduces the next ones (PieceRing).
// Across the network a host sends L (M - 1) B = (M - 1) N / M: N / 2 at 2 + 2.
// Order of the sums: within a node by local rank, then across the nodes in `across` order: never
// timing's.
#include <algorithm>
#include <cstring>

#include "core/group.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/reduce.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"
#include "shm/two_level.hpp"

namespace mpidist::detail::shm {

void run_two_level_reduce_scatter(const Call& call) {
  Group& group = *call.group;
  const char* operation = call.name;
  Segment& seg = segment(group, operation);
  across(group, operation);  // at the group's first 2D call, with Group::grid and Group::node_across
  const int nodes = group.topology.num_nodes, me = seg.rank();
  const auto ranks = static_cast<std::size_t>(call.size);
  const std::size_t e = size_of(call.dtype), block = call.count * e;
  const auto* in = static_cast<const std::byte*>(call.in);
  auto* out = static_cast<std::byte*>(call.out);
  const ReduceOp op = reduction_of(call.dtype, call.op, 0).op;  // Avg sums; divided at the end
  const int mine = group.node_across[static_cast<std::size_t>(me)];  // this rank's place in `across`
  // A multiple of 64 bytes (of every element size) that P of fit a half.
  const std::size_t piece = std::min(PieceRing::piece_limit, Segment::half_bytes / ranks) / 64 * 64;
  // A slot: the M sums sent (this rank's own among them), then the M - 1 received.
  PieceRing ring(group, seg, (2 * static_cast<std::size_t>(nodes) - 1) * piece);
  const auto sent = [&](const PieceRing::Piece& p, int j) { return p.slot + static_cast<std::size_t>(j) * p.bytes; };
  const auto received = [&](const PieceRing::Piece& p, int j) {
    return p.slot + (static_cast<std::size_t>(nodes) + static_cast<std::size_t>(j < mine ? j : j - 1)) * piece;
  };
  // 3. The M sums of piece f of this rank's block, in `across` order, into its output.
  Sources sums(nodes);
  const auto finish = [&] {
    const PieceRing::Piece& p = ring.finish(
        operation, "the ranks of the same local rank on the other nodes (the 2D reduce-scatter's cross-node step)");
    for (int j = 0; j < nodes; ++j) sums.data()[j] = j == mine ? sent(p, j) : received(p, j);
    std::byte* result = out + p.first;
    reduce(result, sums.data(), nodes, p.bytes / e, call.dtype, op);
    if (call.op == ReduceOp::Avg) mpi::divide(result, p.bytes / e, call.dtype, call.size);
  };

  Sources sources(seg.size());
  for (std::size_t first = 0; first < block; first += piece) {
    if (ring.full()) finish();
    PieceRing::Piece& p = ring.start(first, std::min(piece, block - first));
    // 1. Piece f of every block into this rank's half, block g at g × piece; then the node's sums
    // of its counterparts' blocks.
    const std::uint64_t step = seg.begin_step(operation);
    std::byte* half = seg.half(me, step);
    for (std::size_t g = 0; g < ranks; ++g) std::memcpy(half + g * piece, in + g * block + first, p.bytes);
    seg.post(Segment::posted(step));
    seg.wait(Segment::posted(step), operation);
    for (int j = 0; j < nodes; ++j) {
      const auto g = static_cast<std::size_t>(group.grid[static_cast<std::size_t>(me * nodes + j)]);
      sources.fill(seg, step, g * piece);
      reduce(sent(p, j), sources.data(), seg.size(), p.bytes / e, call.dtype, op);
    }
    // 2. Each sum to its block's rank, theirs of this rank's block back.
    ring.swap(p, mine, nodes, static_cast<int>(p.bytes / e), mpi::datatype(call.dtype),
              [&](int j) { return sent(p, j); }, [&](int j) { return received(p, j); });
    ring.test_oldest();
  }
  while (!ring.empty()) finish();
}

}  // namespace mpidist::detail::shm
