// The 2D all-reduce across nodes that hold the same number L > 1 of the group's ranks: every local
// rank carries 1/L of the message across the network, instead of one leader carrying all of it
// while its node waits. Per chunk of the message (a segment half, 256 KiB):
//   1. reduce-scatter in the node's segment (reduce_chunk): local rank r sums slice r of the chunk
//      over the node's ranks, in local rank order, into the chunk's slot of the group's buffer
//      (wire_buffer: a request that a timeout leaves pending never writes the caller's memory);
//   2. MPI_Iallreduce of that slice over `across`, the ranks of local index r on every node, in
//      pieces of at most 32 KiB;
//   3. an all-gather in the segment: every rank copies its finished slice into its output and its
//      half, then the others' slices out of theirs.
// Pipelined: up to `in_flight` chunks cross the network while the node reduce-scatters the next
// ones; the all-gather of the oldest follows once its requests complete. While the segment waits
// for the node's other ranks, it tests the oldest chunk's requests (Segment::set_wait_work): Open
// MPI moves a nonblocking collective only inside MPI calls. Every rank of a node runs
// the same steps in the same order (the segment's protocol needs it): step 3 of chunk k comes
// right after step 1 of chunk k + in_flight - 1 (or after the last chunk's), whatever the network does.
// Order of the sums: within a node by local rank, then across the nodes MPI's all-reduce on
// `across`, whose algorithm depends only on the size and the ranks (never on timing) and gives
// every member the same bits. So every rank gets the same bits, and integers are exact.
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

// A piece of a slice on the network, at most: under TCP's eager limit (Open MPI's
// btl_tcp_eager_limit, 64 KiB with the headers) a piece leaves at once, where a whole slice of
// 128 KiB waited for a rendezvous whose handshake moves only inside MPI calls on both hosts. On
// the two-host harness at 2 + 2, against MPI_Allreduce (benchmarks/results/two-hosts-2026-11-27-
// 2d-eager/): whole 128 KiB slices 1.07-1.21 at 1 MiB; chunks cut to 32 KiB slices (64 KiB chunks:
// four times the segment steps) 0.97-1.06 at 1 MiB and 0.64-0.97 at 2-16 MiB; half
// chunks in 32 KiB pieces 0.89-1.08 and 0.58-0.83 (medians of five runs, each harness).
constexpr std::size_t piece_limit = 32 * 1024;
// Pieces a slice is cut into, at most: four at L = 2 (a 128 KiB slice); past eight, larger pieces.
constexpr std::size_t max_pieces = 8;

// Chunks whose cross-node all-reduce may be under way at once: four keep the socket busy through
// a slow step (a descheduled rank on a loaded host). 1 MiB of slices a rank at L = 2.
constexpr std::size_t in_flight = 4;

// One chunk whose slice is on the network, in `used` requests (a piece's all-reduce, or its send
// and receive).
struct Crossing {
  std::size_t first = 0;  // the chunk's byte range in the message
  std::size_t bytes = 0;
  int used = 0;
  std::array<MPI_Request, 2 * max_pieces> requests{};
};

}  // namespace

MPI_Comm across(Group& group) {
  if (group.across == MPI_COMM_NULL) {
    // Collective over the whole group: every member is in this call (the choice of a 2D path is
    // the same on every rank). Ordered by group rank, so node order.
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

std::byte* wire_buffer(Group& group, std::size_t bytes) {
  if (!group.across_buffer) group.across_buffer = std::make_shared<std::vector<std::byte>>();
  std::vector<std::byte>& wire = *group.across_buffer;
  if (wire.size() < bytes) wire.resize(bytes);
  return wire.data();
}

KeepWireIfPending::~KeepWireIfPending() {
  if (!group_.across_buffer || !pending_()) return;
  try {
    at_finalize([kept = group_.across_buffer] {});
  } catch (...) {
    new std::shared_ptr<std::vector<std::byte>>(group_.across_buffer);  // no context: kept for good
  }
  group_.across_buffer.reset();
}

void run_two_level(const Call& call) {
  Group& group = *call.group;
  const char* operation = call.name;
  Segment& seg = segment(group, operation);
  const MPI_Comm peers = across(group);
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
  const int own_node = group.node_across[static_cast<std::size_t>(seg.rank())];

  std::array<Crossing, in_flight> ring;
  std::size_t started = 0, gathered = 0;  // chunks sent across, chunks all-gathered
  // Chunk k's reduced slice, on the network, in slot k % in_flight; after it, the other node's.
  std::byte* const wire = wire_buffer(group, in_flight * 2 * chunk);
  const auto slot = [&](const Crossing& c) { return wire + static_cast<std::size_t>(&c - ring.data()) * 2 * chunk; };
  const auto theirs = [&](const Crossing& c) { return slot(c) + chunk; };
  const std::function<bool()> pending = [&] {
    for (const Crossing& c : ring)
      for (int k = 0; k < c.used; ++k)
        if (c.requests[static_cast<std::size_t>(k)] != MPI_REQUEST_NULL) return true;
    return false;
  };
  const KeepWireIfPending keep(group, pending);
  // Open MPI moves a nonblocking collective only inside MPI calls (libnbc's schedule, TCP's
  // rendezvous): a test of the oldest crossing while the segment waits for the node's other ranks
  // keeps all of them moving, so the network works during the node's steps instead of between them.
  // Once the oldest has finished, its test (of MPI_REQUEST_NULLs) returns at once and moves nothing
  // until the next all-gather: testing the oldest unfinished one instead measured slower on the
  // two-host harness (with chunks of 32 KiB slices, a request each: 1.05-1.12 against 0.91-1.02 x
  // MPI at 1-2 MiB, medians of four runs), each test polling the sockets on a core the node's other
  // rank needs.
  const std::function<void()> test_oldest = [&] {
    if (started == gathered) return;
    Crossing& oldest = ring[gathered % in_flight];
    int done = 0;
    if (oldest.used > 0)
      MPIDIST_MPI_CHECK(MPI_Testall(oldest.used, oldest.requests.data(), &done, MPI_STATUSES_IGNORE));
  };
  const WhileWaiting keep_moving(seg, test_oldest);
  const auto own_slice = [&](const Crossing& c) { return slice(c.bytes / e, seg.size(), seg.rank(), e); };
  const auto gather = [&](Crossing& c) {
    // A Deadline per wait, as the segment's waits keep one: the timeout bounds a silence, not the call.
    for (int k = 0; k < c.used; ++k)
      wait_or_time_out(operation, Deadline(operation, &group), c.requests[static_cast<std::size_t>(k)],
                       "the ranks of the same local rank on the other nodes (the 2D all-reduce's cross-node step)");
    const auto [lo, hi] = own_slice(c);
    std::byte* result = out + c.first + lo * e;
    if (hi > lo) {
      const void* sums[2];
      sums[own_node] = slot(c) + lo * e;
      sums[1 - own_node] = theirs(c) + lo * e;
      if (swap) reduce(result, sums, 2, hi - lo, call.dtype, red.op);
      else std::memcpy(result, slot(c) + lo * e, (hi - lo) * e);
      if (call.op == ReduceOp::Avg) mpi::divide(result, hi - lo, call.dtype, call.size);
    }
    const std::uint64_t step = seg.begin_step(operation);
    if (hi > lo) std::memcpy(seg.half(seg.rank(), step) + lo * e, result, (hi - lo) * e);
    seg.post(Segment::finished(step));
    copy_out_chunk(seg, operation, layout, red, step, c.first, c.bytes, true);
  };

  for (std::size_t first = 0; first < piece.bytes; first += chunk) {
    if (started - gathered == in_flight) gather(ring[gathered++ % in_flight]);
    Crossing& c = ring[started++ % in_flight];
    c.first = first, c.bytes = std::min(chunk, piece.bytes - first), c.used = 0;
    reduce_chunk(seg, operation, layout, red, c.first, c.bytes, slot(c));
    const auto [lo, hi] = own_slice(c);
    // The ranks of `across` share this slice's bounds (equal nodes), so all of them cut it alike
    // and skip an empty one.
    const std::size_t per_piece = std::max(piece_limit / e, (hi - lo + max_pieces - 1) / max_pieces);
    for (std::size_t at = lo; at < hi; at += per_piece) {
      const int n = static_cast<int>(std::min(per_piece, hi - at));
      const auto next = [&] { return &c.requests[static_cast<std::size_t>(c.used++)]; };
      if (swap) {
        MPIDIST_MPI_CHECK(MPI_Irecv(theirs(c) + at * e, n, type, 1 - own_node, 0, peers, next()));
        MPIDIST_MPI_CHECK(MPI_Isend(slot(c) + at * e, n, type, 1 - own_node, 0, peers, next()));
      } else {
        MPIDIST_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, slot(c) + at * e, n, type, op, peers, next()));
      }
    }
    test_oldest();
  }
  while (gathered < started) gather(ring[gathered++ % in_flight]);
}

}  // namespace mpidist::detail::shm
