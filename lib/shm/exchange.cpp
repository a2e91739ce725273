// The uneven collectives through the segment. Every step, each rank puts the next piece of every
// block it still sends into its half, after a header that says where each piece lies and whether
// it has more to send; once every rank has posted, each copies the pieces meant for it out of the
// others' halves. The steps go on until no rank has more, which every rank reads alike from the
// headers, so ranks that send different amounts (all_to_all's splits) still take the same steps.
// The first step's headers also carry each rank's total: above `mpi_from_bytes()` the ranks switch
// to MPI together, at the cost of one flag round instead of a vote.
// A step whose header and pieces fit the sender's control line (`Segment::inline_bytes`) goes
// there instead, beside the flag: a reader then pulls one cache line from the sender instead of
// three (flag, header, data). The sender alone decides, step by step; the line's first byte tells
// every reader which form it took, so ranks that send different amounts may mix the two.
// In all_to_all's splits on a job with a GPU, the first step's line may instead carry a rank's
// vote (exchange_split): it holds device memory, or failed its own checks (its Error's text in its
// half). Every rank reads every line of that step, so all of them leave the exchange alike.
#include "shm/exchange.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/group.hpp"
#include "core/settings.hpp"
#include "shm/segment.hpp"

namespace mpidist::detail::shm {

using mpi::Split;
using mpi::Standing;

namespace {

// A rank sending more than this to the others takes MPI, where MPI may move a large message in
// one copy (Settings::mpi_single_copy: Open MPI's vader with CMA, XPMEM or KNEM): the segment copies
// every byte twice. Where MPI copies twice as well (in and out of its fragments), the segment stays
// ahead at every size and keeps every block.
constexpr std::size_t one_copy_mpi_from_bytes = std::size_t{4} << 20;

std::size_t mpi_from_bytes(const char* operation) {
  return settings(operation).mpi_single_copy ? one_copy_mpi_from_bytes : SIZE_MAX;
}
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

// A half's bytes after the header: what a step's pieces share.
std::size_t room(int size) { return Segment::half_bytes - header_bytes(size); }

Header header_of(const Segment& seg, int rank, std::uint64_t step) {
  return Header{reinterpret_cast<std::uint64_t*>(seg.half(rank, step))};
}

// The in-line form of a step, in the sender's control line: byte 0 the form, then a byte per rank
// with the length of its piece, then the pieces in rank order (a shared block once, for all).
// A Vote line carries a rank's Standing in byte 1 and no pieces.
enum Form : unsigned char { InHalf = 0, InLine = 1, InLineShared = 2, Vote = 3 };

struct Line {
  const unsigned char* bytes;
  Form form() const { return static_cast<Form>(bytes[0]); }
  std::size_t length(std::size_t rank) const { return bytes[1 + rank]; }
  // Where rank `to`'s piece starts, of a group of `n`.
  std::size_t offset(std::size_t to, std::size_t n) const {
    std::size_t at = 1 + n;
    if (form() == InLine)
      for (std::size_t j = 0; j < to; ++j) at += bytes[1 + j];
    return at;
  }
};

Line line_of(const Segment& seg, int rank, std::uint64_t step) {
  return Line{reinterpret_cast<const unsigned char*>(seg.line_data(rank, step))};
}

// Whether a step that sends `bytes` (a shared block counted once) fits a control line in `size`
// ranks' in-line form.
bool fits_line(std::size_t bytes, int size) {
  return 1 + static_cast<std::size_t>(size) + bytes <= Segment::inline_bytes;
}

// gather and scatter move each block one way: while the readers copy one piece out, the writer
// can copy the next one in (the other half). A block of B bytes in pieces of p takes about
// (B/p + 1) copies of p and B/p flag rounds, least at p = sqrt(B x f/c): with a flag round f of
// about 0.4 µs and a copy c of about 0.1 µs a KiB, sqrt(4 KiB x B). So scatter's 128 KiB blocks
// take pieces of 22.6 KiB (6 steps) instead of one step in which the reader waited for the whole
// write (1.16-1.19x MPI_Scatter at 2 ranks, which pipelines). `share` is the piece the half leaves
// each destination; every rank computes the same from the block, which all of them know.
std::size_t streamed_piece(mpi::Exchange::Shape shape, std::size_t block, std::size_t share) {
  if (shape != mpi::Exchange::Shape::Gather && shape != mpi::Exchange::Shape::Scatter) return share;
  constexpr double copy_per_flag_round = 4096.0;
  constexpr std::size_t smallest = std::size_t{16} << 10;
  const auto best = static_cast<std::size_t>(std::sqrt(copy_per_flag_round * static_cast<double>(block)));
  return std::min(share, std::max(smallest, (best + 63) / 64 * 64));
}

// Rank r's total and whether it has more after `step`, from whichever form its step took.
std::uint64_t total_of(const Segment& seg, int r, std::uint64_t step, int size) {
  const Line line = line_of(seg, r, step);
  if (line.form() == InHalf) return header_of(seg, r, step).total();
  std::uint64_t total = 0;  // everything it sends is in this step
  for (std::size_t j = 0; j < static_cast<std::size_t>(size); ++j) total += line.length(j);
  return total;
}
bool more_of(const Segment& seg, int r, std::uint64_t step) {
  return line_of(seg, r, step).form() == InHalf && header_of(seg, r, step).more() != 0;
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

namespace {

// One rank's side of the steps: what it sent and received so far, in bytes.
class Steps {
 public:
  Steps(Segment& seg, const mpi::Exchange& e, const char* operation)
      : seg_(seg), e_(e), operation_(operation), n_(static_cast<std::size_t>(e.size)),
        me_(static_cast<std::size_t>(e.rank)), element_(size_of(e.dtype)), shared_(one_block_for_all(e)),
        start_(header_bytes(e.size)), sent_(n_, 0), got_(n_, 0) {
    for (std::size_t j = 0; j < n_; ++j)
      if (j != me_) total_ += to(j), largest_block_ = std::max(largest_block_, to(j));
  }

  // The bytes this rank sends the others.
  std::size_t total() const { return total_; }

  // Starts a step: this rank's next pieces and its header, posted. Returns the step.
  std::uint64_t write(bool hold_back) {
    const std::uint64_t step = seg_.begin_step(operation_);
    auto* line = reinterpret_cast<unsigned char*>(seg_.line_data(e_.rank, step));
    // Held back, the header must carry the total (the switch to MPI): only the half has room.
    if (!hold_back && fits_line(left(), e_.size)) {
      write_line(line);
      seg_.post(Segment::posted(step));
      return step;
    }
    line[0] = InHalf;
    const Header mine = header_of(seg_, e_.rank, step);
    std::byte* half = seg_.half(e_.rank, step);
    const auto* in = static_cast<const std::byte*>(e_.in);
    // A share of the room for every destination with bytes left (64-byte multiples, so that
    // pieces stay cache-line aligned), or all of it for a shared block.
    std::size_t waiting = 0;
    for (std::size_t j = 0; j < n_; ++j) waiting += j != me_ && sent_[j] < to(j);
    const std::size_t share = shared_ ? room(e_.size) : waiting > 0 ? room(e_.size) / waiting / 64 * 64 : 0;
    const std::size_t piece = streamed_piece(e_.shape, largest_block_, share);
    std::size_t at = start_;
    bool more = false;
    for (std::size_t j = 0; j < n_; ++j) {
      const std::size_t length = j == me_ || hold_back ? 0 : std::min(to(j) - sent_[j], piece);
      // A shared block's piece is copied once, for the first destination; the rest point at it.
      if (length > 0 && (!shared_ || at == start_)) {
        std::memcpy(half + at, in + e_.send_displs[j] * element_ + sent_[j], length);
        mine.offset(j) = at;
        at += length;
      } else {
        mine.offset(j) = start_;
      }
      mine.length(j) = length;
      sent_[j] += length;
      sent_total_ += length;
      more = more || (j != me_ && sent_[j] < to(j));
    }
    mine.total() = total_;
    mine.more() = more ? 1 : 0;
    seg_.post(Segment::posted(step));
    return step;
  }

  // Copies rank r's piece for this rank out of its half (posted). Never past the block this rank
  // expects (a sender's count that differs, unchecked without MPIDIST_VALIDATE=1): what would not
  // fit is counted, not copied.
  void read(int r, std::uint64_t step) {
    const auto i = static_cast<std::size_t>(r);
    const Line line = line_of(seg_, r, step);
    std::size_t length = 0;
    const std::byte* piece = nullptr;
    if (line.form() == InHalf) {
      const Header theirs = header_of(seg_, r, step);
      length = theirs.length(me_);
      piece = seg_.half(r, step) + theirs.offset(me_);
    } else {
      length = line.length(me_);
      piece = reinterpret_cast<const std::byte*>(line.bytes) + line.offset(me_, n_);
    }
    if (got_[i] < from(i) && length > 0)
      std::memcpy(static_cast<std::byte*>(e_.out) + e_.recv_displs[i] * element_ + got_[i], piece,
                  std::min(length, from(i) - got_[i]));
    got_[i] += length;
  }
  bool expects_more(int r) const { return got_[static_cast<std::size_t>(r)] < from(static_cast<std::size_t>(r)); }

  void copy_own_block() const {
    if (e_.recv_counts[me_] > 0)
      std::memmove(static_cast<std::byte*>(e_.out) + e_.recv_displs[me_] * element_,
                   static_cast<const std::byte*>(e_.in) + e_.send_displs[me_] * element_, from(me_));
  }

  // Every rank left at the same step, so the group stays usable; only this rank's result is wrong.
  void check_counts() const {
    std::string problem;
    for (std::size_t i = 0; i < n_; ++i)
      if (i != me_ && got_[i] != from(i))
        problem += (problem.empty() ? "" : ", ") + std::string(e_.recv_counts_name()) + "[" + std::to_string(i) +
                   "] is " + std::to_string(e_.recv_counts[i]) + " but rank " + std::to_string(i) + " sent " +
                   std::to_string(got_[i] / element_);
    if (!problem.empty()) mpi::throw_count_mismatch(operation_, problem);
  }

 private:
  std::size_t to(std::size_t j) const { return e_.send_counts[j] * element_; }

  // The bytes this rank still has to write: a shared block's once.
  std::size_t left() const {
    if (!shared_) return total_ - sent_total_;
    const std::size_t other = me_ == 0 ? 1 : 0;  // every destination's block is the same
    return to(other) - sent_[other];
  }

  // The step's pieces in the control line (they fit: fits_line(left())), all that is left.
  void write_line(unsigned char* line) {
    const auto* in = static_cast<const std::byte*>(e_.in);
    line[0] = shared_ ? InLineShared : InLine;
    std::size_t at = 1 + n_;
    for (std::size_t j = 0; j < n_; ++j) {
      const std::size_t length = j == me_ ? 0 : to(j) - sent_[j];
      line[1 + j] = static_cast<unsigned char>(length);
      // A shared block is copied once, at the start of the pieces; every length says how long.
      if (length > 0 && (!shared_ || at == 1 + n_)) {
        std::memcpy(line + at, in + e_.send_displs[j] * element_ + sent_[j], length);
        at += length;
      }
      sent_[j] += length;
      sent_total_ += length;
    }
  }

  std::size_t from(std::size_t i) const { return e_.recv_counts[i] * element_; }

  Segment& seg_;
  const mpi::Exchange& e_;
  const char* operation_;
  std::size_t n_, me_, element_;
  bool shared_;
  std::size_t start_;
  std::size_t total_ = 0, sent_total_ = 0;  // bytes for the others: all, and written so far
  std::size_t largest_block_ = 0;            // to one other rank
  mpi::Counts sent_, got_;
};

// Where every rank knows every rank's counts (all but all_to_all's splits): whether the ranks take
// MPI, and how many steps they take, with the pieces Steps::write cuts (equal blocks to every
// destination finish together).
struct Plan {
  bool to_mpi;
  std::size_t steps;
};

Plan known_plan(const mpi::Exchange& e, const char* operation) {
  const std::size_t n = static_cast<std::size_t>(e.size), element = size_of(e.dtype), room = shm::room(e.size);
  std::size_t most = 0, steps = 0;
  // A rank sending `block` bytes to each of `destinations` others (one copy for all if shared).
  const auto sends = [&](std::size_t block, std::size_t destinations, bool shared) {
    if (block == 0 || destinations == 0) return;
    most = std::max(most, block * destinations);
    const std::size_t piece = streamed_piece(e.shape, block, shared ? room : room / destinations / 64 * 64);
    steps = std::max(steps, (block + piece - 1) / piece);
  };
  const auto root = static_cast<std::size_t>(e.root);
  switch (e.shape) {
    case mpi::Exchange::Shape::AllToAll: sends(e.send_counts[0] * element, n - 1, false); break;
    case mpi::Exchange::Shape::AllGatherV:
      for (std::size_t r = 0; r < n; ++r) sends(e.recv_counts[r] * element, n - 1, true);
      break;
    case mpi::Exchange::Shape::Gather: sends(e.send_counts[root] * element, 1, false); break;
    case mpi::Exchange::Shape::Scatter: sends(e.recv_counts[root] * element, n - 1, false); break;
    case mpi::Exchange::Shape::AllToAllV: break;
  }
  return Plan{most > mpi_from_bytes(operation), steps};
}

}  // namespace

bool exchange_without_mpi(const mpi::Exchange& e, const char* operation) {
  return takes_exchange(*e.group, operation) && e.shape != mpi::Exchange::Shape::AllToAllV &&
         !known_plan(e, operation).to_mpi;
}

namespace {

// The votes in the first step's lines, read alike by every rank: a failure first, then device memory.
Split votes_of(const Segment& seg, std::uint64_t step, int size) {
  Split split;
  bool device = false;
  for (int r = 0; r < size; ++r) {
    const Line line = line_of(seg, r, step);
    if (line.form() != Vote) continue;
    if (static_cast<Standing>(line.bytes[1]) == Standing::Device) {
      device = true;
    } else if (split.failed++ == 0) {
      const std::byte* half = seg.half(r, step);
      std::uint64_t length = 0;
      std::memcpy(&length, half, sizeof length);
      split.first_failed = r;
      split.failure.assign(reinterpret_cast<const char*>(half + sizeof length), length);
    }
  }
  split.kind = split.failed > 0 ? Split::Failed : device ? Split::OnDevice : Split::Exchanged;
  return split;
}

// A rank's vote, alone in its step: its standing in its line, a failure's text in its half.
std::uint64_t write_vote(Segment& seg, int rank, Standing mine, std::string_view failure, const char* operation) {
  const std::uint64_t step = seg.begin_step(operation);
  auto* line = reinterpret_cast<unsigned char*>(seg.line_data(rank, step));
  line[0] = Vote;
  line[1] = static_cast<unsigned char>(mine);
  if (mine == Standing::Failed) {
    const std::uint64_t length = std::min<std::size_t>(failure.size(), Segment::half_bytes - sizeof length);
    std::memcpy(seg.half(rank, step), &length, sizeof length);
    std::memcpy(seg.half(rank, step) + sizeof length, failure.data(), length);
  }
  seg.post(Segment::posted(step));
  return step;
}

}  // namespace

Split exchange_split(Group& group, const mpi::Exchange* e, Standing mine, std::string_view failure,
                     const char* operation) {
  Segment& seg = segment(group, operation);
  const int size = group.topology.size;
  if (mine != Standing::Host) {
    const std::uint64_t step = write_vote(seg, group.topology.rank, mine, failure, operation);
    seg.wait(Segment::posted(step), operation);
    return votes_of(seg, step, size);
  }
  // The headers say who has more, and in the first step each rank's total (and vote).
  Steps steps(seg, *e, operation);
  const std::size_t mpi_from = mpi_from_bytes(operation);
  const bool hold_back = steps.total() > mpi_from;
  for (bool first = true;; first = false) {
    const std::uint64_t step = steps.write(first && hold_back);
    seg.wait(Segment::posted(step), operation);
    if (first)
      if (Split votes = votes_of(seg, step, size); votes.kind != Split::Exchanged) return votes;
    bool anyone_more = false, to_mpi = false;
    for (int r = 0; r < size; ++r) {
      anyone_more = anyone_more || more_of(seg, r, step);
      to_mpi = to_mpi || (first && total_of(seg, r, step, size) > mpi_from);
    }
    if (to_mpi) {  // every rank read the same totals
      mpi::exchange(*e);
      return Split{};
    }
    if (first) steps.copy_own_block();
    for (int r = 0; r < size; ++r)
      if (r != e->rank) steps.read(r, step);
    if (!anyone_more) break;
  }
  steps.check_counts();
  return Split{};
}

void exchange(const mpi::Exchange& e, const char* operation) {
  if (e.shape == mpi::Exchange::Shape::AllToAllV) {
    // Here no rank votes (exchange_split's callers alone do, alike on every rank).
    (void)exchange_split(*e.group, &e, Standing::Host, {}, operation);
    return;
  }
  // Every rank knows the plan: no call moves nothing through the segment, and a rank waits only
  // for the ranks it receives from (scatter's root and gather's others for none).
  Segment& seg = segment(*e.group, operation);
  const Plan plan = known_plan(e, operation);
  if (plan.to_mpi) return mpi::exchange(e);
  Steps steps(seg, e, operation);
  steps.copy_own_block();
  for (std::size_t k = 0; k < plan.steps; ++k) {
    const std::uint64_t step = steps.write(false);
    for (int r = 0; r < e.size; ++r)
      if (r != e.rank && steps.expects_more(r)) {
        seg.wait(Segment::posted(step), operation, r);
        steps.read(r, step);
      }
  }
  steps.check_counts();
}

}  // namespace mpidist::detail::shm
