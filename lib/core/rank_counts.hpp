// A count (or an offset) for every rank of a group, held in the object itself up to 8 ranks. The
// uneven collectives build four of them per call: a heap allocation each, or a general small
// vector's bookkeeping (about 1500 instructions a call, callgrind), cost more than the rest of a
// small call's own work. Internal.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>

namespace mpidist::detail {

class RankCounts {
 public:
  // Leaves the inline room unwritten (only [0, size) is ever read): a call's exchange holds four.
  RankCounts() noexcept {}
  RankCounts(std::size_t n, std::size_t value) { assign(n, value); }
  template <class It>
  RankCounts(It first, It last) {
    assign(first, last);
  }
  RankCounts(const RankCounts& other) { assign(other.begin(), other.end()); }
  RankCounts(RankCounts&& other) noexcept { take(other); }
  RankCounts& operator=(const RankCounts& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  RankCounts& operator=(RankCounts&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }

  void assign(std::size_t n, std::size_t value) {
    resize(n);
    std::fill(begin(), end(), value);
  }
  template <class It>
  void assign(It first, It last) {
    resize(static_cast<std::size_t>(std::distance(first, last)));
    std::copy(first, last, begin());
  }

  /// Room for n values, left unset: for a caller that writes every one.
  void resize_for_overwrite(std::size_t n) { resize(n); }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t* data() noexcept { return heap_ ? heap_.get() : inline_; }
  const std::size_t* data() const noexcept { return heap_ ? heap_.get() : inline_; }
  std::size_t* begin() noexcept { return data(); }
  std::size_t* end() noexcept { return data() + size_; }
  const std::size_t* begin() const noexcept { return data(); }
  const std::size_t* end() const noexcept { return data() + size_; }
  std::size_t& operator[](std::size_t i) noexcept { return data()[i]; }
  const std::size_t& operator[](std::size_t i) const noexcept { return data()[i]; }

 private:
  static constexpr std::size_t inline_capacity = 8;

  // Room for n values; what was held before is not kept.
  void resize(std::size_t n) {
    if (n <= inline_capacity) heap_.reset();
    else if (!heap_ || capacity_ < n) heap_ = std::make_unique<std::size_t[]>(capacity_ = n);
    size_ = n;
  }
  void take(RankCounts& other) noexcept {
    heap_ = std::move(other.heap_);
    capacity_ = other.capacity_;
    size_ = other.size_;
    if (!heap_) std::copy(other.inline_, other.inline_ + size_, inline_);
    other.size_ = 0;
  }

  std::size_t inline_[inline_capacity];
  std::unique_ptr<std::size_t[]> heap_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

}  // namespace mpidist::detail
