// Blocks between pairs of ranks as MPI messages of at most max_count() elements, whose receiver
// learns the sender's count instead of trusting its own: the pairwise path of the uneven
// collectives (uneven_collectives.cpp). Internal.
//
// The sender sends a block of s elements as s / limit full pieces and a last, shorter one of
// s % limit elements (empty where s is a multiple of limit, s = 0 included), in order on one tag.
// Unchecked (without MPIDIST_VALIDATE=1) the receiver probes each piece before receiving it
// (MPI_Improbe, MPI_Imrecv) and reads until the short one. So a sender whose count differs from
// the receiver's recv_counts never truncates a receive, which Open MPI can leave waiting forever
// and MPICH reports to MPI_COMM_WORLD's handler, never leaves a piece behind for a later call to
// match, even where the receiver expected nothing, and is named with both counts. That costs
// 3-8% of all_to_all's splits at 4-256 KiB across the two-host harness (the small pieces wait in
// MPI's unexpected queue and are copied once more; benchmarks/results/pairwise-probes-2026-11-28/).
// Pre-posting a bounded first piece got that back below the bound and lost more above it (a
// second message: benchmarks/results/pairwise-first-piece-2026-11-28/).
// Where the receiver knows the sender's count (MPIDIST_VALIDATE=1 compared them first, or a header
// told it) it posts its pieces at once instead.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mpidist/tensor.hpp"

namespace mpidist::detail::mpi {

class BlockPieces {
 public:
  /// Pieces on `comm` with `tag`, at most max_count() elements each; `counts_agreed`: every
  /// receiver's count is its sender's (checked across the ranks, or told in a header first).
  BlockPieces(MPI_Comm comm, int tag, bool counts_agreed);

  /// Posts the pieces of `count` elements from `from` to `peer` (at once, MPI_Isend).
  void send(int peer, const void* from, std::size_t count, DataType dtype);
  /// Expects a block from `peer` into `into`, `count` elements at most; received in wait().
  void receive(int peer, void* into, std::size_t count, DataType dtype);

  /// Receives every expected block and waits for every send. Empty where each block held its
  /// receiver's count; else the problems, naming each sender and both counts (a block's elements
  /// past its receiver's count are received and dropped, never written past it).
  std::string wait();

 private:
  struct Expected {
    int peer;
    char* into;
    std::size_t count;  // the receiver's count
    DataType dtype;
    std::size_t got = 0;  // elements the sender's pieces held so far
    bool done = false;
    bool whole = true;  // every piece held whole elements of dtype
  };
  bool take_piece(Expected& block);

  void post(bool sending, int peer, char* at, std::size_t count, DataType dtype);

  MPI_Comm comm_;
  int tag_;
  bool counts_agreed_;
  std::size_t limit_;
  std::vector<MPI_Request> requests_;
  std::vector<Expected> expected_;
  std::vector<std::unique_ptr<char[]>> dropped_;  // pieces past a receiver's count
};

}  // namespace mpidist::detail::mpi
