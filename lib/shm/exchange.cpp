// The uneven collectives through the segment. Every step, each rank puts the next piece of every
// block it still sends into its half, after a header that says where each piece lies and whether
// it has more to send; once every rank has posted, each copies the pieces meant for it out of the
// others' halves. The steps go on until no rank has more, which every rank reads alike from the
// headers, so ranks that send different amounts (all_to_all's splits) still take the same steps.
// The first step's headers also carry each rank's total: above `mpi_from_bytes` the ranks switch
// to MPI together, at the cost of one flag round instead of a vote.
#include "shm/exchange.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/group.hpp"
#include "core/settings.hpp"
#include "shm/segment.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::shm {
namespace {

// A rank sending more than this to the others takes MPI. The segment copies every byte twice;
// measured on the reference machine, it beat MPI_Alltoall up to 16 MiB at 2 and 4 ranks
// (0.78-0.89 to 1 MiB, 0.92-0.98 at 4-16 MiB), but there Open MPI has no single-copy mechanism,
// which elsewhere moves large messages in one copy: beyond a few MiB MPI keeps them.
constexpr std::size_t mpi_from_bytes = std::size_t{4} << 20;
// The header holds two words per rank: a group this large would leave little of a half for data.
constexpr int exchange_max_ranks = 256;

// A rank's header at the start of its half, in words: its total (read in the first step),
// whether it has more after this step, then for every destination where its piece lies in the
// half and its length.
struct Header {
  std::uint64_t* words;
  std::uint64_t& total() const { return words[0]; }
  std::uint64_t& more() const { return words[1]; }
  std::uint64_t& offset(std::size_t rank) const { return words[2 + 2 * rank]; }
  std::uint64_t& length(std::size_t rank) const { return words[3 + 2 * rank]; }
};

std::size_t header_bytes(int size) {
  const std::size_t bytes = (2 + 2 * static_cast<std::size_t>(size)) * sizeof(std::uint64_t);
  return (bytes + 63) / 64 * 64;
}

Header header_of(const Segment& seg, int rank, std::uint64_t step) {
  return Header{reinterpret_cast<std::uint64_t*>(seg.half(rank, step))};
}

// Whether every block this rank sends is the same bytes (all_gather_v: its `in`, to every rank):
// then each piece is written once and every destination's slot points at it.
bool one_block_for_all(const mpi::Exchange& e) {
  for (int j = 1; j < e.size; ++j) {
    const auto i = static_cast<std::size_t>(j);
    if (e.send_counts[i] != e.send_counts[0] || e.send_displs[i] != e.send_displs[0]) return false;
  }
  return true;
}

}  // namespace

bool takes_exchange(const Group& group, const char* operation) {
  return group.topology.num_nodes == 1 && group.topology.size >= 2 && group.topology.size <= exchange_max_ranks &&
         settings(operation).host_all_reduce != HostAllReduce::Mpi;
}

void exchange(const mpi::Exchange& e, const char* operation) {
  Segment& seg = segment(*e.group, operation);
  const auto n = static_cast<std::size_t>(e.size);
  const auto me = static_cast<std::size_t>(e.rank);
  const std::size_t element = size_of(e.dtype);
  const auto* in = static_cast<const std::byte*>(e.in);
  auto* out = static_cast<std::byte*>(e.out);
  // Bytes sent to and received from each rank so far (the own block is one copy, once the ranks
  // know they stay here).
  std::vector<std::size_t> sent(n, 0), got(n, 0);
  std::size_t total = 0;
  for (std::size_t j = 0; j < n; ++j)
    if (j != me) total += e.send_counts[j] * element;
  const bool shared = one_block_for_all(e);
  const std::size_t start = header_bytes(e.size), room = Segment::half_bytes - start;
  for (bool first = true;; first = false) {
    const std::uint64_t step = seg.begin_step(operation);
    const Header mine = header_of(seg, e.rank, step);
    std::byte* half = seg.half(e.rank, step);
    // This step's pieces: a share of the room for every destination with bytes left (64-byte
    // multiples, so that pieces stay cache-line aligned), or all of it for a shared block.
    std::size_t waiting = 0;
    for (std::size_t j = 0; j < n; ++j) waiting += j != me && sent[j] < e.send_counts[j] * element;
    const std::size_t piece = shared ? room : waiting > 0 ? room / waiting / 64 * 64 : 0;
    const bool too_large = first && total > mpi_from_bytes;
    std::size_t at = start;
    bool more = false;
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t left = j == me || too_large ? 0 : e.send_counts[j] * element - sent[j];
      const std::size_t length = std::min(left, piece);
      // A shared block's piece is copied once, for the first destination, and the rest point at it.
      if (length > 0 && (!shared || at == start)) {
        std::memcpy(half + at, in + e.send_displs[j] * element + sent[j], length);
        mine.offset(j) = at;
        at += length;
      } else {
        mine.offset(j) = start;
      }
      mine.length(j) = length;
      sent[j] += length;
      more = more || (j != me && sent[j] < e.send_counts[j] * element);
    }
    mine.total() = total;
    mine.more() = more ? 1 : 0;
    seg.post(Segment::posted(step));
    seg.wait(Segment::posted(step), operation);
    bool anyone_more = false, to_mpi = false;
    for (int r = 0; r < e.size; ++r) {
      const Header theirs = header_of(seg, r, step);
      anyone_more = anyone_more || theirs.more() != 0;
      to_mpi = to_mpi || (first && theirs.total() > mpi_from_bytes);
    }
    if (to_mpi) return mpi::exchange(e);  // every rank read the same totals
    if (first && e.recv_counts[me] > 0)
      std::memmove(out + e.recv_displs[me] * element, in + e.send_displs[me] * element, e.recv_counts[me] * element);
    for (int r = 0; r < e.size; ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (i == me) continue;
      const Header theirs = header_of(seg, r, step);
      const std::size_t length = theirs.length(me);
      // Never past the block this rank expects (a sender's count that differs, unchecked
      // without MPIDIST_VALIDATE=1): what would not fit is counted, not copied.
      const std::size_t expected = e.recv_counts[i] * element;
      if (got[i] < expected)
        std::memcpy(out + e.recv_displs[i] * element + got[i], seg.half(r, step) + theirs.offset(me),
                    std::min(length, expected - got[i]));
      got[i] += length;
    }
    if (!anyone_more) break;
  }
  // Every rank left at the same step, so the group stays usable; only this rank's result is wrong.
  std::string problem;
  for (std::size_t i = 0; i < n; ++i)
    if (i != me && got[i] != e.recv_counts[i] * element)
      problem += (problem.empty() ? "" : ", ") + std::string("recv_counts[") + std::to_string(i) + "] is " +
                 std::to_string(e.recv_counts[i]) + " but rank " + std::to_string(i) + " sent " +
                 std::to_string(got[i] / element);
  if (!problem.empty())
    throw Error(operation, "the counts do not match: " + problem +
                               " (MPIDIST_VALIDATE=1 checks them on every rank before anything moves)");
}

}  // namespace mpidist::detail::shm
