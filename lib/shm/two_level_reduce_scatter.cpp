// The 2D reduce-scatter across nodes that hold the same number L > 1 of the group's ranks (M nodes,
// P = L M ranks, blocks of B bytes, N = P B in on every rank). Per piece [f, f + n) of the blocks:
//   1. a reduce-scatter in the node's segment: every rank copies piece f of all P blocks of its
//      input into its half; local rank l sums, over the node's ranks in local rank order, the
//      pieces of the M blocks whose ranks have its local index (its counterparts on every node,
//      `across` order) into a slot of the group's buffer (wire_buffer: a request that a timeout
//      leaves pending never writes the caller's memory);
//   2. each sum goes to the counterpart whose block it is (MPI_Isend over `across`), and the
//      counterparts' sums of this rank's block come back (MPI_Irecv): one exchange, where
//      MPI_Ireduce_scatter_block (Open MPI's libnbc: a reduce, then a scatter) took two and
//      measured 1.2-1.7 x MPI_Reduce_scatter_block below 256 KiB at 2 + 2;
//   3. once they are in, the M sums of its block reduced in `across` order into the output (the
//      average divided there).
// Up to `in_flight` pieces are on the network while the node reduces the next ones; the segment's
// waits test the oldest (Open MPI moves a nonblocking collective only inside MPI calls). A piece
// of at most 32 KiB a block leaves at once, under TCP's eager limit.
// Across the network a host sends L (M - 1) B = (M - 1) N / M: N / 2 at 2 + 2.
// Order of the sums: within a node by local rank, then across the nodes in `across` order: never
// timing's.
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/reduce.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"
#include "shm/two_level.hpp"
#include "watch/timeout.hpp"

namespace mpidist::detail::shm {
namespace {

// Bytes of a block a piece carries, at most: under TCP's eager limit (as the 2D all-reduce's pieces).
constexpr std::size_t piece_limit = 32 * 1024;
// Pieces on the network at once.
constexpr std::size_t in_flight = 4;

struct Crossing {
  std::size_t first = 0;  // the piece's byte range in every block
  std::size_t bytes = 0;
  std::vector<MPI_Request> requests;  // M - 1 sends, then M - 1 receives
};

}  // namespace

void run_two_level_reduce_scatter(const Call& call) {
  Group& group = *call.group;
  const char* operation = call.name;
  Segment& seg = segment(group, operation);
  const MPI_Comm peers = across(group);
  const int nodes = group.topology.num_nodes, me = seg.rank();
  const auto ranks = static_cast<std::size_t>(call.size);
  const std::size_t e = size_of(call.dtype), block = call.count * e;
  const auto* in = static_cast<const std::byte*>(call.in);
  auto* out = static_cast<std::byte*>(call.out);
  const ReduceOp local_op = reduction_of(call.dtype, call.op, 0).op;  // Avg sums; divided at the end
  const MPI_Datatype type = mpi::datatype(call.dtype);
  const int mine = group.node_across[static_cast<std::size_t>(me)];  // this rank's place in `across`
  const auto others = static_cast<std::size_t>(nodes - 1);
  // A multiple of 64 bytes (of every element size) that P of fit a half.
  const std::size_t piece = std::min(piece_limit, Segment::half_bytes / ranks) / 64 * 64;
  // A slot: the M sums sent (this rank's own among them), then the M - 1 received.
  const std::size_t slot_bytes = (2 * others + 1) * piece;
  std::byte* const wire = wire_buffer(group, in_flight * slot_bytes);
  // The receive of the sums from `across` rank j (j != mine), in a slot.
  const auto received = [&](std::byte* at, int j) {
    return at + (static_cast<std::size_t>(nodes) + static_cast<std::size_t>(j < mine ? j : j - 1)) * piece;
  };

  std::array<Crossing, in_flight> ring;
  std::size_t started = 0, finished = 0;
  const auto slot = [&](const Crossing& c) { return wire + static_cast<std::size_t>(&c - ring.data()) * slot_bytes; };
  const std::function<bool()> pending = [&] {
    for (const Crossing& c : ring)
      for (const MPI_Request r : c.requests)
        if (r != MPI_REQUEST_NULL) return true;
    return false;
  };
  const KeepWireIfPending keep(group, pending);
  const std::function<void()> test_oldest = [&] {
    if (started == finished) return;
    Crossing& oldest = ring[finished % in_flight];
    int done = 0;
    MPIDIST_MPI_CHECK(MPI_Testall(static_cast<int>(oldest.requests.size()), oldest.requests.data(), &done,
                                  MPI_STATUSES_IGNORE));
  };
  const WhileWaiting keep_moving(seg, test_oldest);
  Sources sums(nodes);  // a piece's sums from every node, in `across` order
  const auto finish = [&](Crossing& c) {
    for (MPI_Request& r : c.requests)
      wait_or_time_out(operation, Deadline(operation, &group), r,
                       "the ranks of the same local rank on the other nodes (the 2D reduce-scatter's cross-node step)");
    std::byte* at = slot(c);
    for (int j = 0; j < nodes; ++j)
      sums.data()[j] = j == mine ? at + static_cast<std::size_t>(j) * c.bytes : received(at, j);
    std::byte* result = out + c.first;
    reduce(result, sums.data(), nodes, c.bytes / e, call.dtype, local_op);
    if (call.op == ReduceOp::Avg) mpi::divide(result, c.bytes / e, call.dtype, call.size);
  };

  Sources sources(seg.size());
  for (std::size_t first = 0; first < block; first += piece) {
    if (started - finished == in_flight) finish(ring[finished++ % in_flight]);
    Crossing& c = ring[started++ % in_flight];
    c.first = first, c.bytes = std::min(piece, block - first);
    // 1. Piece f of every block into this rank's half, block g at g × piece; then the sums of its
    // counterparts' blocks over the node.
    const std::uint64_t step = seg.begin_step(operation);
    std::byte* half = seg.half(me, step);
    for (std::size_t g = 0; g < ranks; ++g) std::memcpy(half + g * piece, in + g * block + first, c.bytes);
    seg.post(Segment::posted(step));
    seg.wait(Segment::posted(step), operation);
    std::byte* send = slot(c);
    for (int j = 0; j < nodes; ++j) {
      const auto g = static_cast<std::size_t>(group.grid[static_cast<std::size_t>(me * nodes + j)]);
      sources.fill(seg, step, g * piece);
      reduce(send + static_cast<std::size_t>(j) * c.bytes, sources.data(), seg.size(), c.bytes / e, call.dtype, local_op);
    }
    // 2. Each sum to its block's rank, theirs of this rank's block back.
    const int count = static_cast<int>(c.bytes / e);
    c.requests.assign(2 * others, MPI_REQUEST_NULL);
    for (int j = 0, k = 0; j < nodes; ++j) {
      if (j == mine) continue;
      const auto s = static_cast<std::size_t>(k++);
      MPIDIST_MPI_CHECK(MPI_Irecv(received(send, j), count, type, j, 0, peers, &c.requests[others + s]));
      MPIDIST_MPI_CHECK(MPI_Isend(send + static_cast<std::size_t>(j) * c.bytes, count, type, j, 0, peers, &c.requests[s]));
    }
    test_oldest();
  }
  while (finished < started) finish(ring[finished++ % in_flight]);
}

}  // namespace mpidist::detail::shm
