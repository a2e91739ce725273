// The data collectives besides all_reduce, through the segment's steps (shm/steps.hpp):
//  - broadcast: the root copies a chunk into its half, the others copy it out (one flag each way).
//  - reduce: small messages one-shot (every rank posts its data, the root alone reduces); larger
//    ones reduce-scatter chunk by chunk in the segment, then the root copies the slices out.
//  - reduce_scatter: a step carries the same piece of every block, each rank's pieces side by
//    side in its half, so every rank reduces its own block's piece in every step (balanced).
//  - all_gather: a step carries a piece of every rank's block; every rank copies all of them out.
// The ranks combine in rank order: every rank that computes a value computes the same bits.
#include "shm/other_collectives.hpp"

#include <algorithm>
#include <cstring>

#include "core/group.hpp"
#include "mpi/host_collectives.hpp"
#include "shm/reduce.hpp"
#include "shm/segment.hpp"
#include "shm/steps.hpp"

namespace mpidist::detail::shm {
namespace {

// Messages up to this size reduce one-shot at the root.
constexpr std::size_t one_shot_limit = 16 * 1024;

std::byte* bytes_at(void* base, std::size_t offset) { return static_cast<std::byte*>(base) + offset; }
const std::byte* bytes_at(const void* base, std::size_t offset) { return static_cast<const std::byte*>(base) + offset; }

void reduce_one_shot(Segment& seg, const Call& c, const Reduction& red, std::size_t bytes) {
  const std::uint64_t step = seg.begin_step(c.name);
  const bool in_line = bytes <= Segment::inline_bytes;
  std::memcpy(seg.payload(seg.rank(), step, in_line), c.in, bytes);
  seg.post(Segment::posted(step));
  if (seg.rank() != c.root) return;  // the next step's rule-2 wait keeps the data safe
  seg.wait(Segment::posted(step), c.name);
  Sources sources(seg.size());
  sources.fill(seg, step, 0, in_line);
  reduce(c.out, sources.data(), seg.size(), c.count, red.dtype, red.op);
  if (red.divisor > 0) mpi::divide(c.out, c.count, red.dtype, red.divisor);
}

void reduce_to_root(Segment& seg, const Call& c) {
  const Reduction red = reduction_of(c.dtype, c.op, seg.size());
  const std::size_t bytes = c.count * red.element;
  if (bytes <= one_shot_limit) return reduce_one_shot(seg, c, red, bytes);
  reduce_to_rank(seg, c.name, Piece{c.in, c.out, bytes}, red, c.root);
}

// Step k carries piece k of every block: rank r's input pieces lie side by side in its half (or
// control line), block b's at b × piece; each rank reduces the pieces of its own block.
void reduce_scatter(Segment& seg, const Call& c) {
  const Reduction red = reduction_of(c.dtype, c.op, seg.size());
  const auto ranks = static_cast<std::size_t>(seg.size());
  const std::size_t block = c.count * red.element;
  const bool in_line = block * ranks <= Segment::inline_bytes;
  // A multiple of 64 bytes: a multiple of every element size, and cache-line aligned pieces.
  const std::size_t piece = in_line ? block : Segment::half_bytes / ranks / 64 * 64;
  for (std::size_t first = 0; first < block; first += piece) {
    const std::size_t length = std::min(piece, block - first);
    const std::uint64_t step = seg.begin_step(c.name);
    std::byte* mine = seg.payload(seg.rank(), step, in_line);
    for (std::size_t b = 0; b < ranks; ++b) std::memcpy(mine + b * piece, bytes_at(c.in, b * block + first), length);
    seg.post(Segment::posted(step));
    seg.wait(Segment::posted(step), c.name);
    Sources sources(seg.size());
    sources.fill(seg, step, static_cast<std::size_t>(seg.rank()) * piece, in_line);
    std::byte* out = bytes_at(c.out, first);
    reduce(out, sources.data(), seg.size(), length / red.element, red.dtype, red.op);
    if (red.divisor > 0) mpi::divide(out, length / red.element, red.dtype, red.divisor);
  }
}

// Step k carries piece k of every rank's block, each in its owner's half (or control line).
void all_gather(Segment& seg, const Call& c) {
  const std::size_t block = c.count * size_of(c.dtype);
  const bool in_line = block <= Segment::inline_bytes;
  const std::size_t piece = in_line ? block : Segment::half_bytes;
  for (std::size_t first = 0; first < block; first += piece) {
    const std::size_t length = std::min(piece, block - first);
    const std::uint64_t step = seg.begin_step(c.name);
    // In place (in is this rank's block of out) the copy back is a copy onto equal bytes.
    std::memcpy(seg.payload(seg.rank(), step, in_line), bytes_at(c.in, first), length);
    seg.post(Segment::posted(step));
    seg.wait(Segment::posted(step), c.name);
    for (int r = 0; r < seg.size(); ++r) {
      const std::byte* from = seg.payload(r, step, in_line);
      std::memcpy(bytes_at(c.out, static_cast<std::size_t>(r) * block + first), from, length);
    }
  }
}

}  // namespace

void run_other_collective(const Call& call) {
  Segment& seg = segment(*call.group, call.name);
  switch (call.kind) {
    case CollectiveKind::Broadcast:
      return broadcast_from_rank(seg, call.name, call.out, call.count * size_of(call.dtype), call.root);
    case CollectiveKind::Reduce: return reduce_to_root(seg, call);
    case CollectiveKind::ReduceScatter: return reduce_scatter(seg, call);
    case CollectiveKind::AllGather: return all_gather(seg, call);
    case CollectiveKind::AllReduce: break;
  }
}

}  // namespace mpidist::detail::shm
