// Deterministic test data for tensor collectives and the expected results, computed locally in
// double. Small integers keep every float sum exact; half types are compared with a tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "mpidist/collectives.hpp"

namespace mpidist_test {

template <class T>
constexpr bool is_half_v = std::is_same_v<T, mpidist::float16> || std::is_same_v<T, mpidist::bfloat16>;

template <class T>
T make(double v) {
  if constexpr (is_half_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

template <class T>
double as_double(T x) {
  if constexpr (is_half_v<T>) return static_cast<double>(static_cast<float>(x));
  else return static_cast<double>(x);
}

/// Calls f.template operator()<T>() for every integer element type (the bitwise reductions').
template <class F>
void for_each_integer_dtype(F&& f) {
  f.template operator()<std::int8_t>();
  f.template operator()<std::uint8_t>();
  f.template operator()<std::int32_t>();
  f.template operator()<std::int64_t>();
  f.template operator()<std::uint32_t>();
  f.template operator()<std::uint64_t>();
}

/// Calls f.template operator()<T>() for every element type.
template <class F>
void for_each_dtype(F&& f) {
  f.template operator()<mpidist::float16>();
  f.template operator()<mpidist::bfloat16>();
  f.template operator()<float>();
  f.template operator()<double>();
  for_each_integer_dtype(f);
}

/// Rank `rank`'s value at global index `i`: in [-2, 2] ([0, 4] unsigned), or {1, 2, -1} for
/// products, so that sums and products over 4 ranks fit every type exactly.
template <class T>
double value_at(mpidist::ReduceOp op, int rank, std::size_t i) {
  const bool is_unsigned = std::is_unsigned_v<T>;
  if (op == mpidist::ReduceOp::Product) {
    const auto k = (i * 5 + static_cast<std::size_t>(rank)) % 3;
    return k == 0 ? 1.0 : k == 1 ? 2.0 : (is_unsigned ? 1.0 : -1.0);
  }
  const auto v = static_cast<double>((i * 7 + static_cast<std::size_t>(rank) * 3) % 5);
  return is_unsigned ? v : v - 2.0;
}

template <class T>
std::vector<T> fill(mpidist::ReduceOp op, int rank, std::size_t count, std::size_t first = 0) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = make<T>(value_at<T>(op, rank, first + i));
  return values;
}

/// The reduction over all ranks of value_at(op, r, i), as the library defines it (integer Avg
/// truncates toward zero).
template <class T>
double expected_at(mpidist::ReduceOp op, int size, std::size_t i) {
  double acc = value_at<T>(op, 0, i);
  for (int r = 1; r < size; ++r) {
    const double x = value_at<T>(op, r, i);
    switch (op) {
      case mpidist::ReduceOp::Product: acc *= x; break;
      case mpidist::ReduceOp::Min: acc = std::min(acc, x); break;
      case mpidist::ReduceOp::Max: acc = std::max(acc, x); break;
      default: acc += x; break;
    }
  }
  if (op == mpidist::ReduceOp::Avg) {
    acc /= size;
    if constexpr (std::is_integral_v<T>) acc = std::trunc(acc);
  }
  return acc;
}

template <class T>
double tolerance(double want) {
  const double scale = std::max(1.0, std::abs(want));
  if constexpr (std::is_same_v<T, mpidist::bfloat16>) return 0.05 * scale;
  else if constexpr (std::is_same_v<T, mpidist::float16>) return 0.01 * scale;
  else if constexpr (std::is_same_v<T, float>) return 1e-5 * scale;
  else if constexpr (std::is_same_v<T, double>) return 1e-12 * scale;
  else return 0.0;
}

/// One failure (at the first wrong element) per compared buffer, labelled with the case.
template <class T>
void expect_values(const std::vector<T>& got, const std::vector<double>& want, const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(as_double(got[i]) - want[i]) > tolerance<T>(want[i])) {
      ADD_FAILURE() << label << ": element " << i << " is " << as_double(got[i]) << ", expected " << want[i];
      return;
    }
  }
}

template <class T>
std::string label(const char* what, mpidist::ReduceOp op, std::size_t count, bool in_place) {
  return std::string(what) + " " + std::string(mpidist::to_string(mpidist::dtype_v<T>)) + " " +
         std::string(mpidist::to_string(op)) + " count " + std::to_string(count) + (in_place ? " in place" : " out of place");
}

}  // namespace mpidist_test
