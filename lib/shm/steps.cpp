// The steps the shared-memory collectives are built from.
#include "shm/steps.hpp"

#include "mpi/host_collectives.hpp"
#include "shm/reduce.hpp"

namespace mpidist::detail::shm {

Reduction reduction_of(DataType dtype, ReduceOp op, int divisor) {
  const bool avg = op == ReduceOp::Avg;
  return {dtype, avg ? ReduceOp::Sum : op, avg ? divisor : 0, size_of(dtype)};
}

std::uint64_t reduce_chunk(Segment& seg, const char* operation, const Layout& layout, const Reduction& red,
                           std::size_t first, std::size_t bytes, std::byte* own_out) {
  const std::uint64_t step = seg.begin_step(operation);
  std::byte* mine = seg.half(seg.rank(), step);
  const std::size_t e = red.element;
  const auto [lo, hi] = slice(bytes / e, seg.size(), seg.rank(), e);
  // Only the slices that the other ranks reduce are copied in: this rank reads its own slice
  // straight from its input (the same bytes, so the same sums), buffer by buffer where the slice
  // spans several of a list.
  layout.gather(first, lo * e, mine);
  layout.gather(first + hi * e, bytes - hi * e, mine + hi * e);
  seg.post(Segment::posted(step));
  seg.wait(Segment::posted(step), operation);
  const std::size_t own_first = lo * e;  // a named copy: clang before 16 cannot capture a binding
  std::byte* dest = (own_out ? own_out : mine) + own_first;
  Sources sources(seg.size());
  layout.visit(first + own_first, (hi - lo) * e, [&](const Piece& p, std::size_t at, std::size_t done, std::size_t n) {
    sources.fill(seg, step, own_first + done);
    sources.data()[seg.rank()] = static_cast<const std::byte*>(p.in) + at;
    reduce(dest + done, sources.data(), seg.size(), n / e, red.dtype, red.op);
    if (red.divisor > 0) mpi::divide(dest + done, n / e, red.dtype, red.divisor);
  });
  seg.post(Segment::finished(step));
  return step;
}

void copy_out_chunk(Segment& seg, const char* operation, const Layout& layout, const Reduction& red,
                    std::uint64_t step, std::size_t first, std::size_t bytes, bool own_done) {
  const auto copy_slice = [&](int r) {
    const auto [lo, hi] = slice(bytes / red.element, seg.size(), r, red.element);
    if (hi > lo)
      layout.scatter(first + lo * red.element, (hi - lo) * red.element, seg.half(r, step) + lo * red.element);
  };
  // The own slice is ready (and still in the cache): copying it out first fills the wait for the
  // slower ranks with work.
  if (!own_done) copy_slice(seg.rank());
  seg.wait(Segment::finished(step), operation);
  for (int r = 0; r < seg.size(); ++r)
    if (r != seg.rank()) copy_slice(r);
}

void reduce_to_rank(Segment& seg, const char* operation, const Piece& piece, const Reduction& red, int root) {
  const Layout layout(std::span(&piece, 1));
  const std::size_t chunk = Segment::half_bytes / red.element * red.element;
  for (std::size_t first = 0; first < piece.bytes; first += chunk) {
    const std::size_t bytes = std::min(chunk, piece.bytes - first);
    // The root's own slice goes straight into its output: only the root reads it.
    const bool at_root = seg.rank() == root;
    std::byte* own_out = at_root ? static_cast<std::byte*>(piece.out) + first : nullptr;
    const std::uint64_t step = reduce_chunk(seg, operation, layout, red, first, bytes, own_out);
    if (!at_root) continue;  // the next step's rule-2 wait keeps the halves safe
    copy_out_chunk(seg, operation, layout, red, step, first, bytes, true);
  }
}

void broadcast_from_rank(Segment& seg, const char* operation, void* buffer, std::size_t total, int root) {
  auto* data = static_cast<std::byte*>(buffer);
  for (std::size_t first = 0; first < total; first += Segment::half_bytes) {
    const std::size_t bytes = std::min(Segment::half_bytes, total - first);
    const std::uint64_t step = seg.begin_step(operation);
    // A few bytes ride in the root's control line with its flag.
    const bool in_line = total <= Segment::inline_bytes;
    std::byte* shared = seg.payload(root, step, in_line);
    if (seg.rank() == root) {
      std::memcpy(shared, data + first, bytes);
      seg.post(Segment::finished(step));
    } else {
      seg.post(Segment::posted(step));
      seg.wait(Segment::finished(step), operation, root);
      std::memcpy(data + first, shared, bytes);
    }
  }
}

void scatter_from_rank(Segment& seg, const char* operation, const void* blocks, std::size_t block, void* own,
                       int root) {
  const auto* data = static_cast<const std::byte*>(blocks);
  const std::size_t total = block * static_cast<std::size_t>(seg.size());
  const std::size_t mine = block * static_cast<std::size_t>(seg.rank());  // this rank's block's offset
  if (seg.rank() == root) std::memcpy(own, data + mine, block);
  const bool in_line = total <= Segment::inline_bytes;
  for (std::size_t first = 0; first < total; first += Segment::half_bytes) {
    const std::size_t bytes = std::min(Segment::half_bytes, total - first);
    const std::uint64_t step = seg.begin_step(operation);
    std::byte* shared = seg.payload(root, step, in_line);
    // The part of [first, first + bytes) that is this rank's block.
    const std::size_t from = std::max(first, mine), to = std::min(first + bytes, mine + block);
    if (seg.rank() == root) {
      // The root's own block stays out of the segment: only the others' are copied in.
      std::memcpy(shared, data + first, from < to ? from - first : bytes);
      if (from < to) std::memcpy(shared + (to - first), data + to, first + bytes - to);
      seg.post(Segment::finished(step));
    } else {
      // A rank with nothing of its block in this step reads nothing: it need not wait (rule 1).
      seg.post(Segment::posted(step));
      if (from >= to) continue;
      seg.wait(Segment::finished(step), operation, root);
      std::memcpy(static_cast<std::byte*>(own) + (from - mine), shared + (from - first), to - from);
    }
  }
}

}  // namespace mpidist::detail::shm
