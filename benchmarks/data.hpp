// Test data for mpidist-bench: the value every rank puts at every index, the value a correct
// collective leaves there, and a tolerant comparison. Values are small integers so that sums are
// exact in every element type (float16 up to 2048, bfloat16 up to 256 per element and rank count
// times five); Avg and half types are compared with a tolerance, integers exactly.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <type_traits>

#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"

namespace bench {

/// A type tag, so with_dtype can hand a C++ element type to a generic lambda.
template <class T>
struct Tag {
  using type = T;
};

/// Calls `fn(Tag<T>{})` with the C++ type of `dtype`.
template <class F>
decltype(auto) with_dtype(mpidist::DataType dtype, F&& fn) {
  using mpidist::DataType;
  switch (dtype) {
    case DataType::Float16: return fn(Tag<mpidist::float16>{});
    case DataType::BFloat16: return fn(Tag<mpidist::bfloat16>{});
    case DataType::Float32: return fn(Tag<float>{});
    case DataType::Float64: return fn(Tag<double>{});
    case DataType::Int8: return fn(Tag<std::int8_t>{});
    case DataType::UInt8: return fn(Tag<std::uint8_t>{});
    case DataType::Int32: return fn(Tag<std::int32_t>{});
    case DataType::Int64: return fn(Tag<std::int64_t>{});
    case DataType::UInt32: return fn(Tag<std::uint32_t>{});
    case DataType::UInt64: return fn(Tag<std::uint64_t>{});
    case DataType::Complex64:
    case DataType::Complex128: break;  // refused by the options (options.cpp)
  }
  throw std::logic_error("with_dtype: unknown DataType");
}

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, mpidist::float16> || std::is_same_v<T, mpidist::bfloat16>;

template <class T>
double to_double(T value) {
  if constexpr (is_half_v<T>) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

template <class T>
T from_double(double value) {
  if constexpr (is_half_v<T>) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

/// The value `rank` contributes at global index `i`: 1..5 in a rank-dependent rotation, except
/// for Product, where exactly one rank per index contributes 2 (and the rest 1), so the product
/// is 2 at any rank count instead of overflowing.
inline int pattern(int rank, std::size_t i, int nranks, mpidist::ReduceOp op) {
  if (op == mpidist::ReduceOp::Product) return i % static_cast<std::size_t>(nranks) == static_cast<std::size_t>(rank) ? 2 : 1;
  return static_cast<int>((static_cast<std::size_t>(rank) * 7 + i) % 5) + 1;
}

/// The result a reduction over all ranks leaves at index i depends only on i % 5: the table of
/// those five values, computed the way the library defines them (integers wrap, integer Avg
/// truncates toward zero).
template <class T>
std::array<T, 5> expected_reduction(int nranks, mpidist::ReduceOp op) {
  using mpidist::ReduceOp;
  std::array<T, 5> table{};
  for (std::size_t r = 0; r < 5; ++r) {
    if (op == ReduceOp::Product) {
      table[r] = from_double<T>(2.0);
      continue;
    }
    std::int64_t sum = 0;
    int lo = 5, hi = 1;
    for (int rank = 0; rank < nranks; ++rank) {
      const int v = pattern(rank, r, nranks, op);
      sum += v;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    if (op == ReduceOp::Min) table[r] = from_double<T>(lo);
    else if (op == ReduceOp::Max) table[r] = from_double<T>(hi);
    else if constexpr (std::is_integral_v<T>) {
      // C++20 makes the narrowing conversion modular, as MPI's integer sums are.
      const T wrapped = static_cast<T>(sum);
      table[r] = op == ReduceOp::Avg ? static_cast<T>(wrapped / static_cast<T>(nranks)) : wrapped;
    } else {
      table[r] = from_double<T>(op == ReduceOp::Avg ? static_cast<double>(sum) / nranks : static_cast<double>(sum));
    }
  }
  return table;
}

/// Relative tolerance of a floating-point result: a few units in the last place of the type.
template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, mpidist::float16>) return 4e-3;
  else if constexpr (std::is_same_v<T, mpidist::bfloat16>) return 3e-2;
  else if constexpr (std::is_same_v<T, float>) return 1e-5;
  else return 1e-12;
}

/// True when `got` is the expected value (exactly for integers, within tolerance<T>() otherwise).
template <class T>
bool matches(T got, T want) {
  if constexpr (std::is_integral_v<T>) {
    return got == want;
  } else {
    const double g = to_double(got), w = to_double(want);
    return std::fabs(g - w) <= tolerance<T>() * std::fmax(1.0, std::fabs(w));  // false for NaN
  }
}

/// Writes rank's pattern for global indices [first, first + out.size()).
template <class T>
void fill_pattern(std::span<T> out, int rank, std::size_t first, int nranks, mpidist::ReduceOp op) {
  // Five (or two) distinct values: convert them once, not once per element.
  std::array<T, 5> values{};
  for (std::size_t r = 0; r < 5; ++r) values[r] = from_double<T>(pattern(rank, r, nranks, op));
  if (op == mpidist::ReduceOp::Product) {
    const T one = from_double<T>(1.0), two = from_double<T>(2.0);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(rank, first + i, nranks, op) == 2 ? two : one;
    return;
  }
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = values[(first + i) % 5];
}

/// Counts the elements of `got` (global indices from `first`) that differ from `table[i % 5]`.
template <class T>
std::size_t count_wrong(std::span<const T> got, std::size_t first, const std::array<T, 5>& table) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += matches(got[i], table[(first + i) % 5]) ? 0 : 1;
  return wrong;
}

/// The pattern `rank` contributes, as the table count_wrong takes (for data-movement checks).
template <class T>
std::array<T, 5> pattern_table(int rank, int nranks) {
  std::array<T, 5> table{};
  for (std::size_t r = 0; r < 5; ++r) table[r] = from_double<T>(pattern(rank, r, nranks, mpidist::ReduceOp::Sum));
  return table;
}

/// A typed view of `count` elements at raw host memory.
template <class T>
std::span<T> typed(std::byte* data, std::size_t count) {
  return {reinterpret_cast<T*>(data), count};
}
template <class T>
std::span<const T> typed(const std::byte* data, std::size_t count) {
  return {reinterpret_cast<const T*>(data), count};
}

}  // namespace bench
