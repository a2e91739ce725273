// Two algorithms share the segment's steps (see shm_segment.hpp for the protocol):
//  - one-shot, for small messages: every rank copies its whole input into its half, then reduces
//    all halves into its output. One wait; every rank does all the arithmetic.
//  - reduce-scatter in the segment, for the rest, chunk by chunk (a half at a time): every rank
//    copies a chunk of its input in, reduces its 1/L slice of the chunk from all halves in place,
//    then copies every rank's reduced slice out. Two waits per chunk; consecutive chunks alternate
//    halves, so a fast rank starts the next chunk while slow ones still copy the last one out.
// Both reduce in rank order, so every rank gets the same bits whoever arrives first.
#include "shm_collectives.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "../context.hpp"
#include "../group.hpp"
#include "../mpi_check.hpp"
#include "../settings.hpp"
#include "host_collectives.hpp"
#include "shm_reduce.hpp"
#include "shm_segment.hpp"

namespace mpidist::detail::shm {
namespace {

// Auto's crossovers (MPIDIST_HOST_ALLREDUCE=auto), measured with mpidist-bench on the reference
// machine (benchmarks/results/shm.md): below them MPI_Allreduce is as fast or faster.
constexpr std::size_t one_node_crossover = 1024;
constexpr std::size_t hierarchical_crossover = 32 * 1024 * 1024;
// Messages up to this size go one-shot (measured: beyond it the split arithmetic wins).
constexpr std::size_t one_shot_limit = 16 * 1024;

// The pieces as one logical byte range.
class Layout {
 public:
  explicit Layout(std::span<const Piece> pieces) : pieces_(pieces) {
    if (pieces.size() > 1) {
      starts_.reserve(pieces.size() + 1);
      std::size_t at = 0;
      for (const auto& p : pieces) starts_.push_back(at), at += p.bytes;
      starts_.push_back(at);
    }
  }
  std::size_t bytes() const { return pieces_.size() == 1 ? pieces_[0].bytes : starts_.empty() ? 0 : starts_.back(); }

  // f(piece, offset in piece, offset in [first, first + bytes), length) for every part of the range.
  template <class F>
  void visit(std::size_t first, std::size_t bytes, F&& f) const {
    if (pieces_.size() == 1) {
      if (bytes > 0) f(pieces_[0], first, std::size_t{0}, bytes);
      return;
    }
    auto i = static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), first) - starts_.begin()) - 1;
    for (std::size_t done = 0; done < bytes; ++i) {
      const std::size_t in_piece = first + done - starts_[i];
      const std::size_t n = std::min(pieces_[i].bytes - in_piece, bytes - done);
      if (n > 0) f(pieces_[i], in_piece, done, n);
      done += n;
    }
  }
  void gather(std::size_t first, std::size_t bytes, std::byte* to) const {
    visit(first, bytes, [&](const Piece& p, std::size_t at, std::size_t done, std::size_t n) {
      std::memcpy(to + done, static_cast<const std::byte*>(p.in) + at, n);
    });
  }
  void scatter(std::size_t first, std::size_t bytes, const std::byte* from) const {
    visit(first, bytes, [&](const Piece& p, std::size_t at, std::size_t done, std::size_t n) {
      std::memcpy(static_cast<std::byte*>(p.out) + at, from + done, n);
    });
  }

 private:
  std::span<const Piece> pieces_;
  std::vector<std::size_t> starts_;  // byte offset of each piece, then the total (more than one piece)
};

// Source pointers of one reduction, on the stack for the usual node sizes.
class Sources {
 public:
  explicit Sources(int n) : n_(n) {
    if (n > static_cast<int>(inline_.size())) heap_.resize(static_cast<std::size_t>(n));
  }
  const void** data() { return heap_.empty() ? inline_.data() : heap_.data(); }
  void fill(const Segment& seg, std::uint64_t step, std::size_t offset, bool in_line = false) {
    for (int r = 0; r < n_; ++r) data()[r] = (in_line ? seg.line_data(r, step) : seg.half(r, step)) + offset;
  }

 private:
  int n_;
  std::array<const void*, 16> inline_{};
  std::vector<const void*> heap_;
};

struct Reduction {
  DataType dtype;
  ReduceOp op;     // Avg reduces as Sum, then divides by `divisor`
  int divisor;     // 0: no division
  std::size_t element;
};

// Element range [first, last) of rank r's slice of a chunk of n elements: equal slices rounded to
// 64 bytes, so that slices start on cache lines and the loops on aligned data.
std::pair<std::size_t, std::size_t> slice(std::size_t n, int ranks, int r, std::size_t element) {
  const std::size_t align = std::max<std::size_t>(1, 64 / element);
  std::size_t per = (n + static_cast<std::size_t>(ranks) - 1) / static_cast<std::size_t>(ranks);
  per = (per + align - 1) / align * align;
  const std::size_t first = std::min(n, per * static_cast<std::size_t>(r));
  return {first, std::min(n, first + per)};
}

void one_shot(Segment& seg, const char* operation, const Layout& layout, const Reduction& red) {
  const std::size_t bytes = layout.bytes();
  const std::uint64_t step = seg.begin_step(operation);
  // A few words ride in the control line with the flag: one cache-line transfer per reader.
  const bool in_line = bytes <= Segment::inline_bytes;
  layout.gather(0, bytes, in_line ? seg.line_data(seg.rank(), step) : seg.half(seg.rank(), step));
  seg.post(Segment::posted(step));
  seg.wait(Segment::posted(step), operation);
  Sources sources(seg.size());
  layout.visit(0, bytes, [&](const Piece& p, std::size_t at, std::size_t done, std::size_t n) {
    sources.fill(seg, step, done, in_line);
    void* out = static_cast<std::byte*>(p.out) + at;
    reduce(out, sources.data(), seg.size(), n / red.element, red.dtype, red.op);
    if (red.divisor > 0) mpi::divide(out, n / red.element, red.dtype, red.divisor);
  });
}

// One chunk of the reduce-scatter: [first, first + bytes) of the message through half `step`.
// Returns the step; the chunk's reduced slices are in every rank's half once finished(step) is seen.
std::uint64_t reduce_chunk(Segment& seg, const char* operation, const Layout& layout, const Reduction& red,
                           std::size_t first, std::size_t bytes) {
  const std::uint64_t step = seg.begin_step(operation);
  std::byte* mine = seg.half(seg.rank(), step);
  layout.gather(first, bytes, mine);
  seg.post(Segment::posted(step));
  seg.wait(Segment::posted(step), operation);
  const auto [lo, hi] = slice(bytes / red.element, seg.size(), seg.rank(), red.element);
  if (hi > lo) {
    Sources sources(seg.size());
    sources.fill(seg, step, lo * red.element);
    reduce(mine + lo * red.element, sources.data(), seg.size(), hi - lo, red.dtype, red.op);
    if (red.divisor > 0) mpi::divide(mine + lo * red.element, hi - lo, red.dtype, red.divisor);
  }
  seg.post(Segment::finished(step));
  return step;
}

// Copies every rank's reduced slice of the chunk at `first` out of half `step`.
void copy_out_chunk(const Segment& seg, const Layout& layout, const Reduction& red, std::uint64_t step,
                    std::size_t first, std::size_t bytes) {
  for (int r = 0; r < seg.size(); ++r) {
    const auto [lo, hi] = slice(bytes / red.element, seg.size(), r, red.element);
    if (hi > lo) layout.scatter(first + lo * red.element, (hi - lo) * red.element, seg.half(r, step) + lo * red.element);
  }
}

// The whole all-reduce among the node's ranks. A chunk is a multiple of the element size.
void all_reduce_local(Segment& seg, const char* operation, const Layout& layout, const Reduction& red) {
  const std::size_t total = layout.bytes();
  if (total <= one_shot_limit) return one_shot(seg, operation, layout, red);
  const std::size_t chunk = Segment::half_bytes / red.element * red.element;
  for (std::size_t first = 0; first < total; first += chunk) {
    const std::size_t bytes = std::min(chunk, total - first);
    const std::uint64_t step = reduce_chunk(seg, operation, layout, red, first, bytes);
    seg.wait(Segment::finished(step), operation);
    copy_out_chunk(seg, layout, red, step, first, bytes);
  }
}

// The node's sum lands in the leader's (local rank 0) `out`; other ranks' `out` is untouched.
void reduce_to_leader(Segment& seg, const char* operation, const Piece& piece, const Reduction& red) {
  const Layout layout(std::span(&piece, 1));
  const std::size_t chunk = Segment::half_bytes / red.element * red.element;
  for (std::size_t first = 0; first < piece.bytes; first += chunk) {
    const std::size_t bytes = std::min(chunk, piece.bytes - first);
    const std::uint64_t step = reduce_chunk(seg, operation, layout, red, first, bytes);
    if (seg.rank() != 0) continue;  // the next step's rule-2 wait keeps the halves safe
    seg.wait(Segment::finished(step), operation);
    copy_out_chunk(seg, layout, red, step, first, bytes);
  }
}

// The leader's `buffer` is copied to every other rank's `buffer` of the node.
void broadcast_from_leader(Segment& seg, const char* operation, void* buffer, std::size_t total) {
  auto* data = static_cast<std::byte*>(buffer);
  for (std::size_t first = 0; first < total; first += Segment::half_bytes) {
    const std::size_t bytes = std::min(Segment::half_bytes, total - first);
    const std::uint64_t step = seg.begin_step(operation);
    if (seg.rank() == 0) {
      std::memcpy(seg.half(0, step), data + first, bytes);
      seg.post(Segment::finished(step));
    } else {
      seg.post(Segment::posted(step));
      seg.wait(Segment::finished(step), operation, 0);
      std::memcpy(data + first, seg.half(0, step), bytes);
    }
  }
}

Reduction reduction_of(DataType dtype, ReduceOp op, int divisor) {
  const bool avg = op == ReduceOp::Avg;
  return {dtype, avg ? ReduceOp::Sum : op, avg ? divisor : 0, size_of(dtype)};
}

}  // namespace

bool accepts(const Call& call, bool one_node) {
  if (call.kind != CollectiveKind::AllReduce || call.device >= 0 || call.size < 2) return false;
  if (call.group->topology.num_nodes == 1 ? !one_node : one_node) return false;
  switch (settings(call.name).host_all_reduce) {
    case HostAllReduce::Mpi: return false;
    case HostAllReduce::Shm: return true;
    case HostAllReduce::Auto: break;
  }
  const std::size_t bytes = call.count * size_of(call.dtype);
  return bytes >= (one_node ? one_node_crossover : hierarchical_crossover);
}

void run_one_node(const Call& call) {
  const Piece piece{call.in, call.out, call.count * size_of(call.dtype)};
  all_reduce_pieces(*call.group, call.name, std::span(&piece, 1), call.dtype, call.op);
}

void all_reduce_pieces(Group& group, const char* operation, std::span<const Piece> pieces, DataType dtype,
                       ReduceOp op) {
  Segment& seg = segment(group, operation);
  all_reduce_local(seg, operation, Layout(pieces), reduction_of(dtype, op, seg.size()));
}

void run_hierarchical(const Call& call) {
  Group& group = *call.group;
  // A rank alone on its node (the 1 of 3 + 1) needs no segment.
  Segment* seg = group.topology.local_size > 1 ? &segment(group, call.name) : nullptr;
  const std::size_t bytes = call.count * size_of(call.dtype);
  const Piece piece{call.in, call.out, bytes};
  // Inside the node a plain sum (or min, ...); the average is taken once, by the leader, at the end.
  if (seg) reduce_to_leader(*seg, call.name, piece, reduction_of(call.dtype, call.op, 0));
  else if (call.in != call.out) std::memcpy(call.out, call.in, bytes);
  if (group.leaders != MPI_COMM_NULL) {
    const MPI_Datatype type = mpi::datatype(call.dtype);
    const MPI_Op op = mpi::reduction(call.op, call.dtype);
    // Pieces of 4 MiB: Open MPI's all-reduce slows down tenfold above 16 MiB (it faults its
    // temporary memory in anew on every call), and ints bound an MPI count anyway.
    const std::size_t limit = std::max<std::size_t>(1, (std::size_t{4} << 20) / size_of(call.dtype));
    auto* out = static_cast<std::byte*>(call.out);
    for (std::size_t first = 0; first < call.count; first += limit) {
      const int n = static_cast<int>(std::min(limit, call.count - first));
      MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, out + first * size_of(call.dtype), n, type, op, group.leaders));
    }
    if (call.op == ReduceOp::Avg) mpi::divide(call.out, call.count, call.dtype, call.size);
  }
  if (seg) broadcast_from_leader(*seg, call.name, call.out, bytes);
}

}  // namespace mpidist::detail::shm
