// The 2D all-reduce across nodes that hold the same number L > 1 of the group's ranks: every local
// rank carries 1/L of the message across the network, instead of one leader carrying all of it
// while its node waits. Per chunk of the message (a segment half, 256 KiB):
//   1. reduce-scatter in the node's segment (reduce_chunk): local rank r sums slice r of the chunk
//      over the node's ranks, in local rank order, into the chunk's slot of the group's buffer
//      (PieceRing: a request that a timeout leaves pending never writes the caller's memory);
//   2. that slice across the nodes, among the ranks of local index r on every node (`across`), in
//      pieces of at most 32 KiB: between two nodes a swap, each summing the two slices in `across`
//      order; among more, MPI_Iallreduce;
//   3. an all-gather in the segment: every rank copies its finished slice into its output and its
//      half, then the others' slices out of theirs.
// Pipelined (PieceRing): up to four chunks cross the network while the node reduce-scatters the
// next ones; the all-gather of the oldest follows once its requests complete, and the segment's
// waits test them meanwhile. Every rank of a node runs the same steps in the same order (the
// segment's protocol needs it): step 3 of chunk k comes right after step 1 of chunk k + 3 (or after
// the last chunk's), whatever the network does.
// Order of the sums: within a node by local rank, then across the nodes in `across` order (the
// swap) or by MPI's all-reduce on `across`, whose algorithm depends only on the size and the ranks
// (never on timing) and gives every member the same bits. So every rank gets the same bits, and
// integers are exact.
// This file also holds what the 2D paths share: `across`, the group's buffer, PieceRing.
#include "shm/two_level.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/reduce.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"
#include "watch/timeout.hpp"

namespace mpidist::detail::shm {
namespace {

// Pieces a slice is cut into, at most: four at L = 2 (a 128 KiB slice); past eight, larger pieces.
// Why pieces of 32 KiB (PieceRing::piece_limit): under TCP's eager limit a piece leaves at once,
// where a whole slice of 128 KiB waited for a rendezvous whose handshake moves only inside MPI
// calls on both hosts. On the two-host harness at 2 + 2, against MPI_Allreduce
// (benchmarks/results/two-hosts-2026-11-27-2d-eager/): whole 128 KiB slices 1.07-1.21 at 1 MiB;
// chunks cut to 32 KiB slices (64 KiB chunks: four times the segment steps) 0.97-1.06 at 1 MiB and
// 0.64-0.97 at 2-16 MiB; half chunks in 32 KiB pieces 0.89-1.08 and 0.58-0.83 (medians of five
// runs, each harness).
constexpr std::size_t max_pieces = 8;

// The group's buffer for data on the network (Group::across_buffer), of at least `bytes`.
std::byte* wire_buffer(Group& group, std::size_t bytes) {
  if (!group.across_buffer) group.across_buffer = std::make_shared<std::vector<std::byte>>();
  std::vector<std::byte>& wire = *group.across_buffer;
  if (wire.size() < bytes) wire.resize(bytes);
  return wire.data();
}

}  // namespace

MPI_Comm across(Group& group, const char* operation) {
  if (group.across == MPI_COMM_NULL) {
    // Collective over the whole group: every member is in this call (the choice of a 2D path is
    // the same on every rank). The split waits inside MPI, so every member's coming is waited for
    // first where the wait can leave: on a rank that refused this call, at once (refusals.hpp).
    // On `comm`, as the split: a rank that refused votes on `control`, where a barrier would
    // match its vote.
    MPI_Request everyone = MPI_REQUEST_NULL;
    MPIDIST_MPI_CHECK(MPI_Ibarrier(group.comm, &everyone));
    wait_or_time_out(operation, Deadline(operation, &group, Deadline::Watch::Refusals), everyone,
                     "every rank of the group to set up its 2D collectives");
    // Ordered by group rank, so node order.
    const GroupTopology& t = group.topology;
    MPI_Comm made = MPI_COMM_NULL;
    MPIDIST_MPI_CHECK(MPI_Comm_split(group.comm, t.local_rank, t.rank, &made));
    MPIDIST_MPI_CHECK(MPI_Comm_set_errhandler(made, MPI_ERRORS_RETURN));
    // Where every group rank sits: its local rank, its rank in its `across`, its node.
    std::array<int, 3> mine{t.local_rank, 0, t.node_rank};
    MPIDIST_MPI_CHECK(MPI_Comm_rank(made, &mine[1]));
    std::vector<int> all(3 * static_cast<std::size_t>(t.size));
    MPIDIST_MPI_CHECK(MPI_Allgather(mine.data(), 3, MPI_INT, all.data(), 3, MPI_INT, group.comm));
    group.grid.assign(static_cast<std::size_t>(t.local_size * t.num_nodes), -1);
    group.node_across.assign(static_cast<std::size_t>(t.local_size), -1);
    for (int g = 0; g < t.size; ++g) {
      const int* at = &all[3 * static_cast<std::size_t>(g)];
      // On unequal nodes some places stay empty; the 2D paths are not taken there.
      if (at[0] < t.local_size && at[1] < t.num_nodes)
        group.grid[static_cast<std::size_t>(at[0] * t.num_nodes + at[1])] = g;
      if (at[2] == t.node_rank) group.node_across[static_cast<std::size_t>(at[0])] = at[1];
    }
    group.across = made;
  }
  return group.across;
}

// Four pieces in flight keep the socket busy through a slow step (a descheduled rank on a loaded
// host): for the all-reduce, 1 MiB of slices a rank at L = 2. Once the oldest has finished, its
// test (of MPI_REQUEST_NULLs) returns at once and moves nothing until the next finish: testing the
// oldest unfinished one instead measured slower on the two-host harness (the 2D all-reduce with
// chunks of 32 KiB slices, a request each: 1.05-1.12 against 0.91-1.02 x MPI at 1-2 MiB, medians of
// four runs), each test polling the sockets on a core the node's other rank needs.
PieceRing::PieceRing(Group& group, Segment& seg, std::size_t slot_bytes)
    : group_(group),
      peers_(group.across),  // made by the call's across()
      test_oldest_([this] {
        if (empty()) return;
        Piece& oldest = ring_[finished_ % in_flight];
        int done = 0;
        MPIDIST_MPI_CHECK(
            MPI_Testall(static_cast<int>(oldest.requests.size()), oldest.requests.data(), &done, MPI_STATUSES_IGNORE));
      }),
      testing_(seg, test_oldest_) {
  std::byte* const wire = wire_buffer(group, in_flight * slot_bytes);
  for (std::size_t k = 0; k < in_flight; ++k) ring_[k].slot = wire + k * slot_bytes;
}

PieceRing::~PieceRing() {
  if (!group_.across_buffer || !pending()) return;
  try {
    at_finalize([kept = group_.across_buffer] {});
  } catch (...) {
    new std::shared_ptr<std::vector<std::byte>>(group_.across_buffer);  // no context: kept for good
  }
  group_.across_buffer.reset();
}

bool PieceRing::pending() const noexcept {
  for (const Piece& p : ring_)
    for (const MPI_Request r : p.requests)
      if (r != MPI_REQUEST_NULL) return true;
  return false;
}

PieceRing::Piece& PieceRing::start(std::size_t first, std::size_t bytes) {
  Piece& p = ring_[started_++ % in_flight];
  p.first = first, p.bytes = bytes;
  p.requests.clear();
  return p;
}

PieceRing::Piece& PieceRing::finish(const char* operation, const char* what) {
  Piece& p = ring_[finished_++ % in_flight];
  // A Deadline per wait, as the segment's waits keep one: the timeout bounds a silence, not the call.
  for (MPI_Request& r : p.requests)
    wait_or_time_out(operation, Deadline(operation, &group_, Deadline::Watch::Refusals), r, what);
  return p;
}

void PieceRing::all_reduce(Piece& piece, void* data, int count, MPI_Datatype type, MPI_Op op) {
  piece.requests.push_back(MPI_REQUEST_NULL);
  MPIDIST_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, count, type, op, peers_, &piece.requests.back()));
}

void PieceRing::post_receive(Piece& piece, void* to, int count, MPI_Datatype type, int from) {
  piece.requests.push_back(MPI_REQUEST_NULL);
  MPIDIST_MPI_CHECK(MPI_Irecv(to, count, type, from, 0, peers_, &piece.requests.back()));
}

void PieceRing::post_send(Piece& piece, const void* from, int count, MPI_Datatype type, int to) {
  piece.requests.push_back(MPI_REQUEST_NULL);
  MPIDIST_MPI_CHECK(MPI_Isend(from, count, type, to, 0, peers_, &piece.requests.back()));
}

void run_two_level(const Call& call) {
  Group& group = *call.group;
  const char* operation = call.name;
  Segment& seg = segment(group, operation);
  across(group, operation);  // at the group's first 2D call, with Group::grid and Group::node_across
  const std::size_t e = size_of(call.dtype);
  const Piece piece{call.in, call.out, call.count * e};
  const Layout layout(std::span(&piece, 1));
  // Sums inside the node and across; the average divides each rank's slice once, at the end.
  const Reduction red = reduction_of(call.dtype, call.op, 0);
  const MPI_Datatype type = mpi::datatype(call.dtype);
  const MPI_Op op = mpi::reduction(call.op, call.dtype);
  auto* out = static_cast<std::byte*>(call.out);
  const std::size_t chunk = Segment::half_bytes / e * e;
  // Between two nodes the counterparts swap their slices and each sums the two in `across` order
  // (the same bits on both): one exchange of N / L each way, the bytes MPI_Iallreduce sends, which
  // on the two-host harness at 2 + 2 took 0.48-0.96 x MPI_Allreduce at 16 KiB-1 MiB where Open MPI's
  // MPI_Iallreduce of two ranks (libnbc) took 0.84-1.30 (lib/shm/collectives.cpp has the runs).
  const bool swap = group.topology.num_nodes == 2;
  const int mine = group.node_across[static_cast<std::size_t>(seg.rank())];
  // Chunk k's slice of this node's sums in its slot; after it, the other node's (a swap).
  PieceRing ring(group, seg, 2 * chunk);
  const auto own_slice = [&](const PieceRing::Piece& c) { return slice(c.bytes / e, seg.size(), seg.rank(), e); };
  const auto gather = [&] {
    const PieceRing::Piece& c = ring.finish(
        operation, "the ranks of the same local rank on the other nodes (the 2D all-reduce's cross-node step)");
    const auto [lo, hi] = own_slice(c);
    std::byte* result = out + c.first + lo * e;
    if (hi > lo) {
      if (swap) {
        const void* sums[2];  // `across` order: mine is 0 or 1 between two nodes
        sums[mine] = c.slot + lo * e;
        sums[1 - mine] = c.slot + chunk + lo * e;
        reduce(result, sums, 2, hi - lo, call.dtype, red.op);
      } else {
        std::memcpy(result, c.slot + lo * e, (hi - lo) * e);
      }
      if (call.op == ReduceOp::Avg) mpi::divide(result, hi - lo, call.dtype, call.size);
    }
    const std::uint64_t step = seg.begin_step(operation);
    if (hi > lo) std::memcpy(seg.half(seg.rank(), step) + lo * e, result, (hi - lo) * e);
    seg.post(Segment::finished(step));
    copy_out_chunk(seg, operation, layout, red, step, c.first, c.bytes, true);
  };

  for (std::size_t first = 0; first < piece.bytes; first += chunk) {
    if (ring.full()) gather();
    PieceRing::Piece& c = ring.start(first, std::min(chunk, piece.bytes - first));
    reduce_chunk(seg, operation, layout, red, c.first, c.bytes, c.slot);
    const auto [lo, hi] = own_slice(c);
    // The ranks of `across` share this slice's bounds (equal nodes), so all of them cut it alike
    // and skip an empty one.
    const std::size_t per_piece = std::max(PieceRing::piece_limit / e, (hi - lo + max_pieces - 1) / max_pieces);
    for (std::size_t at = lo; at < hi; at += per_piece) {
      const int n = static_cast<int>(std::min(per_piece, hi - at));
      std::byte* ours = c.slot + at * e;
      if (swap)
        ring.swap(c, mine, 2, n, type, [&](int) { return ours; }, [&](int) { return ours + chunk; });
      else
        ring.all_reduce(c, ours, n, type, op);
    }
    ring.test_oldest();
  }
  while (!ring.empty()) gather();
}

}  // namespace mpidist::detail::shm
