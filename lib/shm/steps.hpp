// The steps the shared-memory collectives are built from (the protocol is in shm/segment.hpp):
// a message as one byte range over the caller's buffers, the reduction of a chunk's slices, and
// moving a buffer from one rank to the others. Every reduction combines the ranks' data in rank
// order, so every rank gets the same bits whoever arrives first. Internal.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "shm/collectives.hpp"
#include "shm/segment.hpp"

namespace mpidist::detail::shm {

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
    for (int r = 0; r < n_; ++r) data()[r] = seg.payload(r, step, in_line) + offset;
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
inline std::pair<std::size_t, std::size_t> slice(std::size_t n, int ranks, int r, std::size_t element) {
  const std::size_t align = std::max<std::size_t>(1, 64 / element);
  std::size_t per = (n + static_cast<std::size_t>(ranks) - 1) / static_cast<std::size_t>(ranks);
  per = (per + align - 1) / align * align;
  const std::size_t first = std::min(n, per * static_cast<std::size_t>(r));
  return {first, std::min(n, first + per)};
}

Reduction reduction_of(DataType dtype, ReduceOp op, int divisor);

/// One chunk of the reduce-scatter: [first, first + bytes) of the message through half `step`.
/// Returns the step; the chunk's reduced slices are in every rank's half once finished(step) is
/// seen, except that with `own_out` (the chunk's place in a reduce root's output, which no other
/// rank reads) this rank's slice goes straight there.
std::uint64_t reduce_chunk(Segment& seg, const char* operation, const Layout& layout, const Reduction& red,
                           std::size_t first, std::size_t bytes, std::byte* own_out = nullptr);

/// Copies every rank's reduced slice of the chunk at `first` out of half `step`: this rank's own
/// at once (unless `own_done`: reduce_chunk put it there), the others' once their ranks have
/// finished(step).
void copy_out_chunk(Segment& seg, const char* operation, const Layout& layout, const Reduction& red,
                    std::uint64_t step, std::size_t first, std::size_t bytes, bool own_done = false);

/// The reduction of every rank's `piece.in` lands in `piece.out` of rank `root` (of the segment);
/// other ranks' `out` is untouched.
void reduce_to_rank(Segment& seg, const char* operation, const Piece& piece, const Reduction& red, int root);

/// Rank `root`'s `buffer` (of the segment) is copied to every other rank's `buffer`.
void broadcast_from_rank(Segment& seg, const char* operation, void* buffer, std::size_t total, int root);

/// Rank `root`'s `blocks` (of the segment: one block of `block` bytes for each of its ranks, in local
/// rank order) are handed out: each rank's block lands in its `own`. `blocks` is read on `root` only.
void scatter_from_rank(Segment& seg, const char* operation, const void* blocks, std::size_t block, void* own,
                       int root);

}  // namespace mpidist::detail::shm
