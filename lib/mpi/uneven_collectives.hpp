// The MPI path of the collectives where every pair of ranks moves a block of its own size:
// all_to_all (equal and uneven), all_gather_v, gather and scatter, on host memory. Internal.
#pragma once

#include <cstddef>
#include <string>

#include "core/rank_counts.hpp"

#include "mpidist/tensor.hpp"

namespace mpidist::detail {
class Group;
}

namespace mpidist::detail::mpi {

/// One rank's side of such a collective: for every rank of the group, the block (in elements,
/// and its offset in elements) it sends to it from `in` and the block it receives from it into
/// `out`. `shape` picks MPI's own collective where every count fits one MPI call.
using Counts = RankCounts;

struct Exchange {
  enum class Shape { AllToAll, AllToAllV, AllGatherV, Gather, Scatter };
  Shape shape;
  Group* group;
  const void* in;
  void* out;
  DataType dtype;
  int root;  // gather, scatter; 0 otherwise
  int rank;
  int size;
  Counts send_counts, send_displs, recv_counts, recv_displs;
};

/// The Error of a receiver whose blocks differ from its recv_counts (`problem` says which and by
/// how much), unchecked without MPIDIST_VALIDATE=1: on the MPI path and through the segment alike.
[[noreturn]] void throw_count_mismatch(const char* operation, const std::string& problem);

/// Moves the blocks: MPI_Alltoall(v), MPI_Allgatherv, MPI_Gather or MPI_Scatter on the group's
/// communicator when every count and offset fits an int (and MPIDIST_MPI_MAX_COUNT); otherwise
/// (every rank decides alike) pairwise messages in pieces on the group's control channel, where
/// no user message can match them.
void exchange(const Exchange& e);

}  // namespace mpidist::detail::mpi
