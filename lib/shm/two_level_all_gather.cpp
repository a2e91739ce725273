// The 2D all-gather across nodes that hold the same number L > 1 of the group's ranks (M nodes,
// P = L M ranks, blocks of B bytes, N = P B gathered):
//   1. every rank starts an MPI_Iallgather of its own block over `across` (the ranks of its local
//      index on every node), in a buffer of the group's: a collective request cannot be cancelled,
//      so one that a timeout leaves pending must not write the caller's memory later;
//   2. meanwhile the node gathers its own L blocks through the segment, whose waits test that
//      request (Open MPI moves a nonblocking collective only inside MPI calls);
//   3. once it completes, the node's ranks swap the M - 1 blocks each received, through the segment.
// Up to `one_step_limit` gathered on a rank across the nodes, steps 2 and 3 are one: every rank
// posts all M of its blocks once the network is done (a segment step fewer to wait for).
// Across the network a host sends L (M - 1) B = (M - 1) N / M: N / 2 at 2 + 2, where Open MPI's
// all-gather at 4 ranks sends each host's two blocks to both ranks of the other (N).
#include <algorithm>
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

// Bytes a rank gathers across the nodes (M blocks) up to which the node swaps them in one step.
// Forced (MPIDIST_HOST_ALLREDUCE=2d) at 2 + 2 on the two-host harness, 16 B-4 KiB gathered, five
// runs each: 0.84-1.01 x MPI_Allgather with each host on a core of its own (two steps: 0.84-1.25),
// 0.87-1.27 with both hosts on both cores (two steps: 0.80-1.83).
constexpr std::size_t one_step_limit = 16 * 1024;

}  // namespace

void run_two_level_all_gather(const Call& call) {
  Group& group = *call.group;
  const char* operation = call.name;
  Segment& seg = segment(group, operation);
  const MPI_Comm peers = across(group);
  const int nodes = group.topology.num_nodes;
  const int me = seg.rank();
  const std::size_t block = call.count * size_of(call.dtype);
  auto* out = static_cast<std::byte*>(call.out);
  // Block of local rank l's counterpart on `across` rank j, in the output.
  const auto place = [&](int l, int j) {
    return out + static_cast<std::size_t>(group.grid[static_cast<std::size_t>(l * nodes + j)]) * block;
  };
  const auto own_node = [&](int l) { return group.node_across[static_cast<std::size_t>(l)]; };
  std::byte* own = place(me, own_node(me));
  if (call.in != own) std::memcpy(own, call.in, block);

  // 1. This rank's block to its counterparts, theirs in `across` order, through the group's buffer.
  std::byte* const wire = wire_buffer(group, static_cast<std::size_t>(nodes) * block);
  const auto on_wire = [&](int j) { return wire + static_cast<std::size_t>(j) * block; };
  std::memcpy(on_wire(own_node(me)), own, block);
  MPI_Request request = MPI_REQUEST_NULL;
  const std::function<bool()> pending = [&] { return request != MPI_REQUEST_NULL; };
  const KeepWireIfPending keep(group, pending);
  MPIDIST_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, wire, static_cast<int>(block), MPI_BYTE, peers,
                                   &request));

  // 2. The node's own blocks, while the network works.
  const bool one_step = static_cast<std::size_t>(nodes) * block <= one_step_limit;
  if (!one_step) {
    const std::function<void()> keep_moving = [&] {
      int done = 0;
      MPIDIST_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    };
    const WhileWaiting testing(seg, keep_moving);
    all_gather_steps(
        seg, operation, block, [&](std::size_t first, std::size_t n, std::byte* to) { std::memcpy(to, own + first, n); },
        [&](int r, std::size_t first, std::size_t n, const std::byte* from) {
          if (r != me) std::memcpy(place(r, own_node(r)) + first, from, n);
        });
  }
  wait_or_time_out(operation, Deadline(operation, &group), request,
                   "the ranks of the same local rank on the other nodes (the 2D all-gather's cross-node step)");
  for (int j = 0; j < nodes; ++j)
    if (j != own_node(me)) std::memcpy(place(me, j), on_wire(j), block);

  // 3. The blocks each rank received, k = 0 .. M - 2 in `across` order skipping its own node's
  // (or all M of them in one step), as one range of bytes.
  const auto each_part = [&](int r, std::size_t first, std::size_t n, auto&& f) {
    const int skip = one_step ? nodes : own_node(r);  // k < M: none skipped
    for (std::size_t done = 0; done < n;) {
      const std::size_t k = (first + done) / block, at = (first + done) % block;
      const std::size_t length = std::min(n - done, block - at);
      const int j = static_cast<int>(k) < skip ? static_cast<int>(k) : static_cast<int>(k) + 1;
      f(place(r, j) + at, done, length);
      done += length;
    }
  };
  all_gather_steps(
      seg, operation, static_cast<std::size_t>(one_step ? nodes : nodes - 1) * block,
      [&](std::size_t first, std::size_t n, std::byte* to) {
        each_part(me, first, n, [&](const std::byte* part, std::size_t done, std::size_t length) {
          std::memcpy(to + done, part, length);
        });
      },
      [&](int r, std::size_t first, std::size_t n, const std::byte* from) {
        if (r == me) return;
        each_part(r, first, n, [&](std::byte* part, std::size_t done, std::size_t length) {
          std::memcpy(part, from + done, length);
        });
      });
}

}  // namespace mpidist::detail::shm
