// all_to_all(v), all_gather_v, gather and scatter over MPI (uneven_collectives.hpp).
#include "mpi/uneven_collectives.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/host_collectives.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::mpi {
namespace {

// The pieces of the pairwise path travel on the control channel with a tag of their own (its
// other tags: all_gather's self copy 7298, monitored_barrier's 7299 and up).
constexpr int pieces_tag = 7297;

bool counts_fit(const Counts& counts, const Counts& displs) {
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > max_count() || displs[i] > static_cast<std::size_t>(INT_MAX)) return false;
  return true;
}

std::vector<int> as_ints(const Counts& values) { return {values.begin(), values.end()}; }

// Whether MPI's own collective can run it, decided alike on every rank from values every rank
// shares. all_to_all's uneven form never does: its counts differ by rank, so deciding alike took a
// vote, one more small collective per call (1-2 us: 3.5 against MPI_Alltoallv's 0.9 at 2 ranks, on
// a quiet 16-core node), while the pairwise path below is what MPI_Alltoallv does anyway (every
// block posted, then one wait), at every size (0.97-1.04 of MPI_Alltoallv from 256 KiB there).
bool fits(const Exchange& e) {
  switch (e.shape) {
    case Exchange::Shape::AllToAll:
      return e.send_counts.empty() || e.send_counts[0] <= max_count();  // the same block everywhere
    case Exchange::Shape::Gather:
      return e.send_counts[static_cast<std::size_t>(e.root)] <= max_count();
    case Exchange::Shape::Scatter:
      return e.recv_counts[static_cast<std::size_t>(e.root)] <= max_count();
    case Exchange::Shape::AllGatherV:
      return counts_fit(e.recv_counts, e.recv_displs);  // counts are the same on every rank
    case Exchange::Shape::AllToAllV:
      return false;
  }
  return false;
}

void with_mpi(const Exchange& e) {
  const MPI_Comm comm = e.group->comm;
  const MPI_Datatype type = datatype(e.dtype);
  const auto me = static_cast<std::size_t>(e.rank);
  switch (e.shape) {
    case Exchange::Shape::AllToAll: {
      const int k = static_cast<int>(e.send_counts[0]);
      MPIDIST_MPI_CHECK(MPI_Alltoall(e.in, k, type, e.out, k, type, comm));
      return;
    }
    case Exchange::Shape::AllToAllV:
      break;  // pairwise (fits)
    case Exchange::Shape::AllGatherV: {
      const auto rc = as_ints(e.recv_counts), rd = as_ints(e.recv_displs);
      MPIDIST_MPI_CHECK(MPI_Allgatherv(e.in, static_cast<int>(e.send_counts[me]), type, e.out, rc.data(), rd.data(),
                                       type, comm));
      return;
    }
    case Exchange::Shape::Gather: {
      const int k = static_cast<int>(e.send_counts[static_cast<std::size_t>(e.root)]);
      MPIDIST_MPI_CHECK(MPI_Gather(e.in, k, type, e.rank == e.root ? e.out : nullptr, k, type, e.root, comm));
      return;
    }
    case Exchange::Shape::Scatter: {
      const int k = static_cast<int>(e.recv_counts[static_cast<std::size_t>(e.root)]);
      MPIDIST_MPI_CHECK(MPI_Scatter(e.rank == e.root ? e.in : nullptr, k, type, e.out, k, type, e.root, comm));
      return;
    }
  }
}

const char* name_of(Exchange::Shape shape) {
  switch (shape) {
    case Exchange::Shape::AllToAll:
    case Exchange::Shape::AllToAllV: return "all_to_all";
    case Exchange::Shape::AllGatherV: return "all_gather_v";
    case Exchange::Shape::Gather: return "gather";
    case Exchange::Shape::Scatter: return "scatter";
  }
  return "all_to_all";
}

// Every block as messages of at most max_count() elements, all posted before any is waited for;
// this rank's block to itself is a copy. Pieces between two ranks match in order (one tag). A
// piece shorter than this rank expects (a sender whose count differs, unchecked without
// MPIDIST_VALIDATE=1) is an Error naming both, not a block left partly unwritten; a longer one is
// MPI's truncation error.
void pairwise(const Exchange& e) {
  const MPI_Datatype type = datatype(e.dtype);
  const std::size_t size = size_of(e.dtype);
  const std::size_t limit = max_count();
  std::vector<MPI_Request> requests;
  std::vector<int> expected;  // per request: a receive's element count, -1 for a send
  std::vector<int> peers;
  const auto post = [&](bool sending, int peer, std::size_t displ, std::size_t count) {
    for (std::size_t off = 0; off < count; off += limit) {
      const int n = static_cast<int>(std::min(limit, count - off));
      requests.push_back(MPI_REQUEST_NULL);
      expected.push_back(sending ? -1 : n);
      peers.push_back(peer);
      if (sending)
        MPIDIST_MPI_CHECK(MPI_Isend(static_cast<const char*>(e.in) + (displ + off) * size, n, type, peer, pieces_tag,
                                    e.group->control, &requests.back()));
      else
        MPIDIST_MPI_CHECK(MPI_Irecv(static_cast<char*>(e.out) + (displ + off) * size, n, type, peer, pieces_tag,
                                    e.group->control, &requests.back()));
    }
  };
  for (int r = 0; r < e.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r == e.rank) {
      if (e.recv_counts[i] > 0)
        std::memmove(static_cast<char*>(e.out) + e.recv_displs[i] * size,
                     static_cast<const char*>(e.in) + e.send_displs[i] * size, e.recv_counts[i] * size);
      continue;
    }
    post(false, r, e.recv_displs[i], e.recv_counts[i]);
    post(true, r, e.send_displs[i], e.send_counts[i]);
  }
  if (requests.empty()) return;
  std::vector<MPI_Status> statuses(requests.size());
  MPIDIST_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data()));
  std::string problem;
  for (std::size_t k = 0; k < requests.size(); ++k) {
    int got = 0;
    if (expected[k] < 0) continue;
    MPIDIST_MPI_CHECK(MPI_Get_count(&statuses[k], type, &got));
    if (got != expected[k])
      problem += (problem.empty() ? "" : ", ") + std::string("recv_counts[") + std::to_string(peers[k]) + "] is " +
                 std::to_string(e.recv_counts[static_cast<std::size_t>(peers[k])]) + " but a piece from rank " +
                 std::to_string(peers[k]) + " held " + std::to_string(got) + " of the " +
                 std::to_string(expected[k]) + " elements expected";
  }
  if (!problem.empty()) throw_count_mismatch(name_of(e.shape), problem);
}

}  // namespace

void throw_count_mismatch(const char* operation, const std::string& problem) {
  throw Error(operation, "the counts do not match: " + problem +
                             " (MPIDIST_VALIDATE=1 checks them on every rank before anything moves)");
}

void exchange(const Exchange& e) {
  if (fits(e)) with_mpi(e);
  else pairwise(e);
}

}  // namespace mpidist::detail::mpi
