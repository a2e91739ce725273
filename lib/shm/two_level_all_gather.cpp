// The 2D all-gather across nodes that hold the same number L > 1 of the group's ranks (M nodes,
// P = L M ranks, blocks of B bytes, N = P B gathered). Per piece [f, f + n) of the blocks:
//   1. every rank sends piece f of its own block to its counterparts (the ranks of its local index
//      on the other nodes, over `across`) and receives theirs, from and into a slot of the group's
//      buffer (wire_buffer: a request that a timeout leaves pending never touches the caller's
//      memory);
//   2. once they are in, a step in the node's segment: every rank posts its M pieces (its own and
//      its counterparts', `across` order), then copies every other local rank's to their places.
// Up to `in_flight` pieces are on the network while the node gathers the older ones; the segment's
// waits test the oldest (Open MPI moves messages only inside MPI calls). A piece of at most 32 KiB
// leaves at once, under TCP's eager limit: whole blocks through MPI_Iallgather, a 64 KiB block a
// rendezvous, measured 1.06 x MPI_Allgather at 256 KiB gathered in two runs of three at 2 + 2.
// Across the network a host sends L (M - 1) B = (M - 1) N / M: N / 2 at 2 + 2, where Open MPI's
// all-gather at 4 ranks sends N (the veth's counts).
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"
#include "shm/two_level.hpp"
#include "watch/timeout.hpp"

namespace mpidist::detail::shm {
namespace {

// Bytes of a block a piece carries, at most (as the other 2D paths' pieces).
constexpr std::size_t piece_limit = 32 * 1024;
// Pieces on the network at once.
constexpr std::size_t in_flight = 4;

struct Crossing {
  std::size_t first = 0;  // the piece's byte range in every block
  std::size_t bytes = 0;
  std::vector<MPI_Request> requests;  // M - 1 receives, then M - 1 sends
};

}  // namespace

void run_two_level_all_gather(const Call& call) {
  Group& group = *call.group;
  const char* operation = call.name;
  Segment& seg = segment(group, operation);
  const MPI_Comm peers = across(group);
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

  const auto others = static_cast<std::size_t>(nodes - 1);
  // A multiple of 64 bytes that M of fit a half.
  const std::size_t piece = std::min(piece_limit, Segment::half_bytes / static_cast<std::size_t>(nodes)) / 64 * 64;
  // A slot: this rank's piece, sent, then the M - 1 received, in `across` order.
  std::byte* const wire = wire_buffer(group, in_flight * static_cast<std::size_t>(nodes) * piece);
  std::array<Crossing, in_flight> ring;
  std::size_t started = 0, finished = 0;
  const auto slot = [&](const Crossing& c) {
    return wire + static_cast<std::size_t>(&c - ring.data()) * static_cast<std::size_t>(nodes) * piece;
  };
  const auto received = [&](const Crossing& c, int j) {
    return slot(c) + static_cast<std::size_t>(j < mine ? j + 1 : j) * piece;
  };
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

  // 2. Piece f of every block on the node, once this rank's counterparts' are in.
  const auto finish = [&](Crossing& c) {
    for (MPI_Request& r : c.requests)
      wait_or_time_out(operation, Deadline(operation, &group), r,
                       "the ranks of the same local rank on the other nodes (the 2D all-gather's cross-node step)");
    const std::uint64_t step = seg.begin_step(operation);
    std::byte* half = seg.half(me, step);
    for (int j = 0; j < nodes; ++j) {
      const std::byte* from = j == mine ? own + c.first : received(c, j);
      std::memcpy(half + static_cast<std::size_t>(j) * piece, from, c.bytes);
      if (j != mine) std::memcpy(place(me, j) + c.first, from, c.bytes);
    }
    seg.post(Segment::posted(step));
    seg.wait(Segment::posted(step), operation);
    for (int r = 0; r < seg.size(); ++r)
      if (r != me)
        for (int j = 0; j < nodes; ++j)
          std::memcpy(place(r, j) + c.first, seg.half(r, step) + static_cast<std::size_t>(j) * piece, c.bytes);
  };

  for (std::size_t first = 0; first < block; first += piece) {
    if (started - finished == in_flight) finish(ring[finished++ % in_flight]);
    Crossing& c = ring[started++ % in_flight];
    c.first = first, c.bytes = std::min(piece, block - first);
    // 1. This rank's piece to its counterparts, theirs back.
    std::memcpy(slot(c), own + first, c.bytes);
    const int count = static_cast<int>(c.bytes);
    c.requests.assign(2 * others, MPI_REQUEST_NULL);
    for (int j = 0, k = 0; j < nodes; ++j) {
      if (j == mine) continue;
      const auto s = static_cast<std::size_t>(k++);
      MPIDIST_MPI_CHECK(MPI_Irecv(received(c, j), count, MPI_BYTE, j, 0, peers, &c.requests[s]));
      MPIDIST_MPI_CHECK(MPI_Isend(slot(c), count, MPI_BYTE, j, 0, peers, &c.requests[others + s]));
    }
    test_oldest();
  }
  while (finished < started) finish(ring[finished++ % in_flight]);
}

}  // namespace mpidist::detail::shm
