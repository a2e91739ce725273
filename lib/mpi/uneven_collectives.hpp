// The MPI path of the collectives where every pair of ranks moves a block of its own size:
// all_to_all (equal and uneven), all_gather_v, gather and scatter, on host memory. Internal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

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
  bool counts_agreed = false;  // the ranks checked every receiver's counts against its senders'

  /// How the caller named `recv_counts`, for errors: all_gather_v's are its `counts`.
  const char* recv_counts_name() const noexcept { return shape == Shape::AllGatherV ? "counts" : "recv_counts"; }
};

/// The Error of a receiver whose blocks differ from its recv_counts (`problem` says which and by
/// how much), unchecked without MPIDIST_VALIDATE=1: on the MPI path and through the segment alike.
[[noreturn]] void throw_count_mismatch(const char* operation, const std::string& problem);

/// Moves the blocks: MPI_Alltoall(v), MPI_Allgatherv, MPI_Gather or MPI_Scatter on the group's
/// communicator when every count and offset fits an int (and MPIDIST_MPI_MAX_COUNT); otherwise
/// (every rank decides alike) pairwise messages in pieces on the group's control channel, where
/// no user message can match them.
void exchange(const Exchange& e);

/// Where a rank stands in all_to_all's splits in a job with a GPU, as it tells the others beside
/// its blocks: it sends and receives host memory (or nothing), it holds device memory, or its own
/// checks of the call failed.
enum class Standing : unsigned char { Host = 0, Device = 1, Failed = 2 };

/// What the ranks' standings told every rank, alike: the exchange went on and is done; or nothing
/// was written into any rank's `out`, because some rank holds device memory, or `failed` ranks
/// failed their checks (the lowest, `first_failed`, with its Error's text).
struct Split {
  enum Kind { Exchanged, OnDevice, Failed } kind = Exchanged;
  int failed = 0;
  int first_failed = -1;
  std::string failure;
};

/// all_to_all's splits where a rank cannot tell the call's path from its own buffers (a job with
/// a GPU: a rank with no elements follows the others to NCCL or to host memory's path), with each
/// rank's standing in a header it sends every other rank with its blocks, instead of a vote of its
/// own (one round trip less across hosts). A Host rank passes its exchange `e` (of shape
/// AllToAllV) and sends its blocks at once; they land in `out` only where every rank is Host, and
/// are otherwise received and dropped, so that none is left for a later call. A Device or Failed
/// rank passes null (and a Failed one its Error's text). Collective over the group.
Split exchange_split(Group& group, const Exchange* e, Standing mine, std::string_view failure);

}  // namespace mpidist::detail::mpi
