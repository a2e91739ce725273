// all_to_all(v), all_gather_v, gather and scatter over MPI (uneven_collectives.hpp).
#include "mpi/uneven_collectives.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "mpi/block_pieces.hpp"
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

const char* at(const Exchange& e, std::size_t displ) { return static_cast<const char*>(e.in) + displ * size_of(e.dtype); }
char* at(void* out, std::size_t displ, DataType dtype) { return static_cast<char*>(out) + displ * size_of(dtype); }

// This rank's block to itself, a copy. Its two counts differ only where the call is wrong.
std::string copy_own_block(const Exchange& e) {
  const auto me = static_cast<std::size_t>(e.rank);
  const std::size_t count = std::min(e.send_counts[me], e.recv_counts[me]);
  if (count > 0) std::memmove(at(e.out, e.recv_displs[me], e.dtype), at(e, e.send_displs[me]), count * size_of(e.dtype));
  if (e.send_counts[me] == e.recv_counts[me]) return {};
  return std::string(e.recv_counts_name()) + "[" + std::to_string(e.rank) + "] is " +
         std::to_string(e.recv_counts[me]) + " but this rank sends itself " + std::to_string(e.send_counts[me]);
}

std::string joined(std::string a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + ", " + b; }

// Every block as pieces on the control channel, every receive and send posted before any wait.
void pairwise(const Exchange& e) {
  BlockPieces pieces(e.group->control, pieces_tag, e.counts_agreed);
  for (int r = 0; r < e.size; ++r) {
    if (r == e.rank) continue;
    const auto i = static_cast<std::size_t>(r);
    pieces.receive(r, at(e.out, e.recv_displs[i], e.dtype), e.recv_counts[i], e.dtype);
    pieces.send(r, at(e, e.send_displs[i]), e.send_counts[i], e.dtype);
  }
  const std::string own = copy_own_block(e);
  const std::string problem = joined(pieces.wait(), own);
  if (!problem.empty()) throw_count_mismatch(name_of(e.shape), problem);
}

// exchange_split's header, one message to every other rank: the sender's standing; a Host
// sender's element type and the count of its block to this rank, and the block itself where it
// is small (inline: no message of its own); a Failed sender's Error's text.
constexpr int standing_tag = 7295;
constexpr std::size_t inline_bytes = 1024;

struct Header {
  std::uint64_t standing = 0, dtype = 0, count = 0, inlined = 0;
};
constexpr std::size_t header_capacity = sizeof(Header) + inline_bytes;

}  // namespace

Split exchange_split(Group& group, const Exchange* e, Standing mine, std::string_view failure) {
  const int size = group.topology.size, me = group.topology.rank;
  const auto n = static_cast<std::size_t>(size);
  std::vector<std::byte> incoming(n * header_capacity), outgoing(n * header_capacity);
  std::vector<MPI_Request> headers;  // the receives (n - 1), then the sends
  headers.reserve(2 * n);
  for (int r = 0; r < size; ++r)
    if (r != me) {
      headers.push_back(MPI_REQUEST_NULL);
      MPIDIST_MPI_CHECK(MPI_Irecv(&incoming[static_cast<std::size_t>(r) * header_capacity],
                                  static_cast<int>(header_capacity), MPI_BYTE, r, standing_tag, group.control,
                                  &headers.back()));
    }
  // Sent before the others' standings are known: a rank not Host receives and drops them.
  BlockPieces pieces(group.control, pieces_tag, true);  // a receive follows its header: the sender's count
  const std::size_t element = e != nullptr ? size_of(e->dtype) : 0;
  for (int r = 0; r < size; ++r) {
    if (r == me) continue;
    const auto i = static_cast<std::size_t>(r);
    std::byte* message = &outgoing[i * header_capacity];
    Header h{static_cast<std::uint64_t>(mine), 0, 0, 0};
    std::size_t payload = 0;
    if (e != nullptr) {
      h.dtype = static_cast<std::uint64_t>(e->dtype);
      h.count = e->send_counts[i];
      h.inlined = h.count * element <= inline_bytes ? 1 : 0;
      if (h.inlined) payload = h.count * element;
      if (payload > 0) std::memcpy(message + sizeof h, at(*e, e->send_displs[i]), payload);
      if (!h.inlined) pieces.send(r, at(*e, e->send_displs[i]), h.count, e->dtype);
    } else if (mine == Standing::Failed) {
      payload = std::min(failure.size(), inline_bytes);
      std::memcpy(message + sizeof h, failure.data(), payload);
    }
    std::memcpy(message, &h, sizeof h);
    headers.push_back(MPI_REQUEST_NULL);
    MPIDIST_MPI_CHECK(MPI_Isend(message, static_cast<int>(sizeof h + payload), MPI_BYTE, r, standing_tag,
                                group.control, &headers.back()));
  }
  // The sends too, in the same call (one MPI call less): a header is small, and its receiver has
  // posted for it.
  std::vector<MPI_Status> statuses(headers.size());
  MPIDIST_MPI_CHECK(MPI_Waitall(static_cast<int>(headers.size()), headers.data(), statuses.data()));
  const auto header = [&](int r) {
    Header h;
    std::memcpy(&h, &incoming[static_cast<std::size_t>(r) * header_capacity], sizeof h);
    return h;
  };
  const auto status_of = [&](int r) { return &statuses[static_cast<std::size_t>(r < me ? r : r - 1)]; };
  // Every rank reads the same standings: a failure first, then device memory.
  Split split;
  bool device = false;
  for (int r = 0; r < size; ++r) {
    const auto standing = r == me ? mine : static_cast<Standing>(header(r).standing);
    if (standing == Standing::Device) {
      device = true;
    } else if (standing == Standing::Failed && split.failed++ == 0) {
      split.first_failed = r;
      if (r == me) {
        split.failure = failure;
      } else {
        int length = 0;
        MPIDIST_MPI_CHECK(MPI_Get_count(status_of(r), MPI_BYTE, &length));
        const auto* text = reinterpret_cast<const char*>(&incoming[static_cast<std::size_t>(r) * header_capacity]);
        split.failure.assign(text + sizeof(Header), static_cast<std::size_t>(length) - sizeof(Header));
      }
    }
  }
  split.kind = split.failed > 0 ? Split::Failed : device ? Split::OnDevice : Split::Exchanged;
  // The Host senders' blocks: into out where every rank is Host and the counts match, else dropped.
  const bool exchanged = split.kind == Split::Exchanged;
  std::string problem;
  std::vector<std::vector<std::byte>> dropped;
  for (int r = 0; r < size; ++r) {
    const Header h = header(r);
    if (r == me || static_cast<Standing>(h.standing) != Standing::Host) continue;
    const auto i = static_cast<std::size_t>(r);
    const auto dtype = static_cast<DataType>(h.dtype);
    const bool fits = exchanged && dtype == e->dtype && h.count == e->recv_counts[i];
    if (exchanged && !fits)
      problem = joined(problem, std::string(e->recv_counts_name()) + "[" + std::to_string(r) + "] is " +
                                    std::to_string(e->recv_counts[i]) + " but rank " + std::to_string(r) + " sends " +
                                    std::to_string(h.count) +
                                    (dtype == e->dtype ? "" : " of " + std::string(to_string(dtype))));
    if (h.inlined) {
      if (fits && h.count > 0)
        std::memcpy(at(e->out, e->recv_displs[i], e->dtype), &incoming[i * header_capacity + sizeof h],
                    h.count * element);
    } else if (fits) {
      pieces.receive(r, at(e->out, e->recv_displs[i], e->dtype), h.count, e->dtype);
    } else {
      dropped.emplace_back(h.count * size_of(dtype));
      pieces.receive(r, dropped.back().data(), h.count, dtype);
    }
  }
  if (exchanged) problem = joined(problem, copy_own_block(*e));
  problem = joined(problem, pieces.wait());
  if (!problem.empty()) throw_count_mismatch("all_to_all", problem);
  return split;
}

void throw_count_mismatch(const char* operation, const std::string& problem) {
  throw Error(operation, "the counts do not match: " + problem +
                             " (MPIDIST_VALIDATE=1 checks them on every rank before anything moves)");
}

void exchange(const Exchange& e) {
  if (!fits(e)) return pairwise(e);
  try {
    with_mpi(e);
  } catch (const Error& error) {
    // MPI's own collective trusts each rank's count: one that differs by rank reaches as MPI's
    // error (Open MPI 4.1's MPI_ERR_OTHER, "known error not in list") only some of the ranks it
    // overran; under Open MPI 4.1.4 the others returned without one, or (6 of 10 jobs at 3 ranks)
    // waited in MPI until the watchdog named each rank's call.
    throw Error(error.communicator(), error.operation(),
                error.detail() + ". If the ranks' counts differ, MPI tells only some of them: others may return "
                                 "without an error, or wait in MPI until the watchdog names each rank's call. "
                                 "MPIDIST_VALIDATE=1 compares every rank's count first and names each");
  }
}

}  // namespace mpidist::detail::mpi
