// The per-rank element counts of the uneven collectives (all_to_all with splits, all_gather_v).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ranges>
#include <span>
#include <type_traits>

namespace mpidist {

namespace detail {
template <class R>
using count_type = std::remove_cv_t<std::ranges::range_value_t<R>>;
/// A contiguous range of integers (not bool): what users hold counts in.
template <class R>
concept CountRange = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                     std::integral<count_type<R>> && !std::same_as<count_type<R>, bool>;
template <class>
inline constexpr bool never = false;
}  // namespace detail

/// One element count per rank, as the caller holds them: any contiguous range of integers
/// (std::vector<int>, std::vector<std::size_t>, std::array<long long, N>, a std::span, MPI's int
/// counts) or a braced list ({2, 0, 1}). A view, as std::span is: the counts must outlive the call
/// (the non-blocking forms copy them at issue). A negative count is the call's Error, naming it.
class Counts {
 public:
  Counts() noexcept = default;
  Counts(std::initializer_list<std::size_t> counts) noexcept
      : data_(counts.begin()), size_(counts.size()), width_(sizeof(std::size_t)), signed_(false) {}
  template <detail::CountRange R>
  Counts(R&& counts) noexcept  // NOLINT: implicit, as a span converts to BufferView
      : data_(std::ranges::data(counts)),
        size_(std::ranges::size(counts)),
        width_(sizeof(detail::count_type<R>)),
        signed_(std::is_signed_v<detail::count_type<R>>) {}
  /// Any other range (floats, bools) is a compile error saying why, not "no matching function".
  template <std::ranges::contiguous_range R>
  requires(!detail::CountRange<R>)
  Counts(R&&) {
    static_assert(detail::never<R>, "mpidist: counts must be integers (std::vector<int>, std::vector<std::size_t>, ...)");
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /// Count i. A negative count (negative(i)) reads as a huge one: the collectives check first.
  std::size_t operator[](std::size_t i) const noexcept {
    switch (width_) {
      case 1: return signed_ ? load<std::int8_t>(i) : load<std::uint8_t>(i);
      case 2: return signed_ ? load<std::int16_t>(i) : load<std::uint16_t>(i);
      case 4: return signed_ ? load<std::int32_t>(i) : load<std::uint32_t>(i);
      default: return signed_ ? load<std::int64_t>(i) : load<std::uint64_t>(i);
    }
  }
  /// Whether count i is below zero (static_cast<std::int64_t>((*this)[i]) is its value then).
  bool negative(std::size_t i) const noexcept { return signed_ && static_cast<std::int64_t>((*this)[i]) < 0; }

 private:
  // Sign-extended, so that a negative count keeps its value through the cast back.
  template <class T>
  std::size_t load(std::size_t i) const noexcept {
    return static_cast<std::size_t>(static_cast<std::int64_t>(static_cast<const T*>(data_)[i]));
  }

  const void* data_ = nullptr;
  std::size_t size_ = 0;
  std::uint8_t width_ = sizeof(std::size_t);
  bool signed_ = false;
};

}  // namespace mpidist
