// The 2D hierarchical collectives across nodes of equal size: the all-reduce (lib/shm/two_level.cpp),
// the all-gather (lib/shm/two_level_all_gather.cpp) and the reduce-scatter
// (lib/shm/two_level_reduce_scatter.cpp). Internal.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <functional>
#include <vector>

#include "core/collective_call.hpp"
#include "core/group.hpp"
#include "shm/segment.hpp"

namespace mpidist::detail::shm {

/// The ranks of this rank's local index on every node (Group::across), ordered by group rank, with
/// Group::grid and Group::node_across; made at the first call and kept. Collective over the group.
MPI_Comm across(Group& group, const char* operation);

/// Pieces of a 2D collective on the network between a rank and its counterparts (the ranks of its
/// local index on the other nodes): up to `in_flight` at once, each in a slot of the group's buffer
/// (Group::across_buffer, never the caller's memory) with the requests that move it. While it
/// lives, the segment's waits test the oldest piece's requests (Open MPI moves messages only inside
/// MPI calls). A collective request cannot be cancelled: if the call leaves with requests pending
/// (an Error), the buffer goes to finalize(), since a late peer's data may still arrive there, and
/// the group takes a new one at its next call.
class PieceRing {
 public:
  static constexpr std::size_t in_flight = 4;
  /// Bytes of a block a piece carries, at most: under TCP's eager limit (Open MPI's
  /// btl_tcp_eager_limit, 64 KiB with the headers), so that a piece leaves at once.
  static constexpr std::size_t piece_limit = 32 * 1024;

  struct Piece {
    std::size_t first = 0;  // the piece's byte range in every block
    std::size_t bytes = 0;
    std::byte* slot = nullptr;
    std::vector<MPI_Request> requests;
  };

  PieceRing(Group& group, Segment& seg, std::size_t slot_bytes);
  ~PieceRing();
  PieceRing(const PieceRing&) = delete;
  PieceRing& operator=(const PieceRing&) = delete;

  bool full() const noexcept { return started_ - finished_ == in_flight; }
  bool empty() const noexcept { return started_ == finished_; }
  /// The next slot, for the piece [first, first + bytes) of the blocks.
  Piece& start(std::size_t first, std::size_t bytes);
  /// Posts, as part of `piece`, a swap with every other `across` rank j (this rank is `mine` of
  /// `nodes`): `count` elements of `type` from send(j), into receive(j).
  template <class Send, class Receive>
  void swap(Piece& piece, int mine, int nodes, int count, MPI_Datatype type, Send&& send, Receive&& receive) {
    for (int j = 0; j < nodes; ++j) {
      if (j == mine) continue;
      post_receive(piece, receive(j), count, type, j);
      post_send(piece, send(j), count, type, j);
    }
  }
  /// Posts an all-reduce of `count` elements at `data`, in place, over `across`, as part of `piece`.
  void all_reduce(Piece& piece, void* data, int count, MPI_Datatype type, MPI_Op op);
  /// Tests the oldest piece's requests: once a piece is posted, as the segment's waits do.
  void test_oldest() { test_oldest_(); }
  /// The oldest piece, once its requests are complete; a silence past the timeout is an Error
  /// naming `what` (the 2D path's cross-node step).
  Piece& finish(const char* operation, const char* what);

 private:
  void post_receive(Piece& piece, void* to, int count, MPI_Datatype type, int from);
  void post_send(Piece& piece, const void* from, int count, MPI_Datatype type, int to);
  bool pending() const noexcept;

  Group& group_;
  MPI_Comm peers_;
  std::array<Piece, in_flight> ring_;
  std::size_t started_ = 0, finished_ = 0;
  std::function<void()> test_oldest_;
  WhileWaiting testing_;
};

/// Runs `call` (a host all_reduce on a group whose nodes all hold the same number, more than one,
/// of its ranks): reduce-scatter in each node's segment, an all-reduce of each local rank's slice
/// with the same local rank of the other nodes, an all-gather in the segment; pipelined in chunks.
/// Collective over the group; the first call also splits the group's `across` communicator.
void run_two_level(const Call& call);

/// Runs `call` (a host all_gather on a group like run_two_level's): piece by piece, every rank
/// swaps its block's piece with its counterparts, then a step in the segment spreads every rank's
/// counterparts' pieces over the node. Collective over the group.
void run_two_level_all_gather(const Call& call);

/// Runs `call` (a host reduce_scatter on a group like run_two_level's): piece by piece, a
/// reduce-scatter in the node's segment gives each rank the node's sums of its counterparts' blocks,
/// which it swaps with them for the other nodes' sums of its own. Collective over the group.
void run_two_level_reduce_scatter(const Call& call);

}  // namespace mpidist::detail::shm
