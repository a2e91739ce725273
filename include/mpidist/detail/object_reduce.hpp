// Element-wise and key-wise reductions behind mpidist::all_reduce and mpidist::reduce for objects.
// Internal; implemented in lib/objects/reduce.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpidist/detail/object_transport.hpp"
#include "mpidist/error.hpp"
#include "mpidist/reduce_op.hpp"

namespace mpidist::detail {

/// A number a ReduceOp reduces: arithmetic (bool included), or std::complex<float> or
/// std::complex<double> (sum, prod and avg; complex numbers have no order for min and max).
template <class T>
concept Number = std::is_arithmetic_v<T> || std::is_same_v<T, std::complex<float>> ||
                 std::is_same_v<T, std::complex<double>>;

/// How a number reduces: the MPI datatype follows from kind and size.
enum class ArithKind { Signed, Unsigned, Floating, Bool, Complex };

template <class T>
constexpr ArithKind arith_kind_v = std::is_same_v<T, bool>       ? ArithKind::Bool
                                   : std::is_floating_point_v<T> ? ArithKind::Floating
                                   : !std::is_arithmetic_v<T>    ? ArithKind::Complex
                                   : std::is_signed_v<T>         ? ArithKind::Signed
                                                                 : ArithKind::Unsigned;

/// In place over the ranks of `c`: `count` elements of (kind, element_size) at `data`. The result
/// lands on every rank (root < 0) or on `root` only (the others' `data` is then unspecified). With
/// `check_length`, the counts are first compared across ranks (Error on every rank if they
/// differ). Local when `c` is solo.
void reduce_elements(const char* operation, const ObjectComm& c, void* data, std::size_t count, ArithKind kind,
                     std::size_t element_size, ReduceOp op, bool check_length, int root);

/// In place over the ranks of `c`, the prefix reduction under `op` (MPI_Scan): rank r's `data`
/// becomes the reduction of ranks 0..r's, or with `exclusive` (MPI_Exscan) of ranks 0..r-1's, rank
/// 0's then the op's identity (0 for a sum). `op` as for reduce_elements but Avg, refused on every
/// rank; `check_length` likewise.
void scan_elements(const char* operation, const ObjectComm& c, void* data, std::size_t count, ArithKind kind,
                   std::size_t element_size, ReduceOp op, bool check_length, bool exclusive);

/// Key-wise in place, on every rank (root < 0) or on root: `values` holds one element of (kind,
/// element_size) per key of `keys`, both in the key order every rank shares. Error on every rank,
/// naming the keys each rank lacks, when keys differ.
void reduce_metrics(const char* operation, const ObjectComm& c, const std::vector<std::string>& keys, void* values,
                    ArithKind kind, std::size_t element_size, ReduceOp op, int root);

/// A metrics map: std::map or std::unordered_map from std::string or integer keys to numbers
/// (`{"loss": 0.5f}`, `{class_id: count}`), as torch users' dicts of metrics.
template <class T>
struct metrics_map : std::false_type {};
template <class K, class V, class C, class A>
struct metrics_map<std::map<K, V, C, A>>
    : std::bool_constant<(std::is_same_v<K, std::string> || std::is_integral_v<K>)&&std::is_arithmetic_v<V>> {};
template <class K, class V, class H, class E, class A>
struct metrics_map<std::unordered_map<K, V, H, E, A>>
    : std::bool_constant<(std::is_same_v<K, std::string> || std::is_integral_v<K>)&&std::is_arithmetic_v<V>> {};

/// Reduces a metrics map key-wise through reduce_metrics, its values in sorted key order (an
/// unordered_map iterates in an order of its own on each rank).
template <class M>
void reduce_metrics_map(const char* operation, const ObjectComm& c, M& metrics, ReduceOp op, int root) {
  using V = typename M::mapped_type;
  using Slot = std::conditional_t<std::is_same_v<V, bool>, unsigned char, V>;  // std::vector<bool> packs bits
  std::vector<std::pair<const typename M::key_type*, V*>> entries;
  entries.reserve(metrics.size());
  for (auto& [key, value] : metrics) entries.emplace_back(&key, &value);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
  std::vector<std::string> keys;
  std::vector<Slot> values;
  keys.reserve(entries.size());
  values.reserve(entries.size());
  for (const auto& [key, value] : entries) {
    if constexpr (std::is_same_v<typename M::key_type, std::string>)
      keys.push_back(*key);
    else
      keys.push_back(std::to_string(*key));
    values.push_back(*value);
  }
  reduce_metrics(operation, c, keys, values.data(), arith_kind_v<V>, sizeof(Slot), op, root);
  for (std::size_t i = 0; i < entries.size(); ++i) *entries[i].second = static_cast<V>(values[i]);
}

template <class T>
struct is_std_array : std::false_type {};
template <class E, std::size_t N>
struct is_std_array<std::array<E, N>> : std::true_type {};

template <class T>
struct reducible_container : std::false_type {};
template <class E, class A>
struct reducible_container<std::vector<E, A>> : std::bool_constant<Number<E>> {};
template <class E, std::size_t N>
struct reducible_container<std::array<E, N>> : std::bool_constant<Number<E>> {};

/// A std::vector of rows, each a std::vector or std::array of numbers (a confusion matrix,
/// per-class histograms).
template <class T>
struct rows_of_numbers : std::false_type {};
template <class R, class A>
struct rows_of_numbers<std::vector<R, A>> : std::bool_constant<reducible_container<R>::value> {};

/// Collective: whether every rank holds as many rows (`lengths.size()`), each as long; if not, the
/// same Error on every rank naming the row count or the first row that differs. Rows whose length
/// is in their type (std::array) pass `check_lengths` false.
void agree_on_rows(const char* operation, const ObjectComm& c, const std::vector<std::size_t>& lengths,
                   bool check_lengths);

/// Reduces rows element by element, laid end to end, once the ranks agreed on the shape: the row
/// count, then each row's length (a std::array's is in its type).
template <class T>
void reduce_rows(const char* operation, const ObjectComm& c, T& rows, ReduceOp op, int root) {
  using Row = typename T::value_type;
  using E = typename Row::value_type;
  using Slot = std::conditional_t<std::is_same_v<E, bool>, unsigned char, E>;  // std::vector<bool> packs bits
  std::vector<std::size_t> lengths;
  lengths.reserve(rows.size());
  for (const auto& row : rows) lengths.push_back(row.size());
  agree_on_rows(operation, c, lengths, !is_std_array<Row>::value);
  std::vector<Slot> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  reduce_elements(operation, c, flat.data(), flat.size(), arith_kind_v<E>, sizeof(Slot), op, false, root);  // agreed above
  if (root >= 0 && c.rank != root && !c.solo()) return;  // the others' values stay as they were
  auto at = flat.begin();
  for (auto& row : rows)
    for (auto&& x : row) x = static_cast<E>(*at++);  // auto&&: a std::vector<bool>'s proxies too
}

/// What all_reduce accepts: a Number, a std::vector or std::array of them, rows of them, or a
/// metrics map.
template <class T>
concept Reducible = Number<T> || reducible_container<T>::value || rows_of_numbers<T>::value || metrics_map<T>::value;

/// What scan and exscan take: a Number, or a std::vector or std::array of them (element by element).
template <class T>
concept Scannable = Number<T> || reducible_container<T>::value;

/// Calls `fn(data, count, kind, element_size, check_length)` on the numbers `value` holds in place:
/// a Number, or a std::vector, std::array or std::span of them (a std::vector<bool>, which packs its
/// bits, through a byte per element written back after). `check_length`: the length may differ by
/// rank (not a Number's, not a std::array's).
template <class T, class F>
void on_numbers(T& value, F&& fn) {
  if constexpr (Number<T>) {
    fn(&value, std::size_t{1}, arith_kind_v<T>, sizeof(T), false);
  } else {
    using E = std::remove_cv_t<typename T::value_type>;
    constexpr bool check_length = !is_std_array<T>::value;
    if constexpr (!requires { value.data(); }) {  // std::vector<bool>
      std::vector<unsigned char> bytes(value.begin(), value.end());
      fn(bytes.data(), bytes.size(), ArithKind::Bool, std::size_t{1}, check_length);
      std::copy(bytes.begin(), bytes.end(), value.begin());
    } else {
      fn(value.data(), value.size(), arith_kind_v<E>, sizeof(E), check_length);
    }
  }
}

/// In place: `value` (a Scannable, or a span of numbers) becomes its prefix reduction over the
/// ranks (scan_elements).
template <class T>
void scan_value_on(const char* operation, const ObjectComm& c, T& value, ReduceOp op, bool exclusive) {
  naming_errors(*c.name, [&] {
    on_numbers(value, [&](void* data, std::size_t count, ArithKind kind, std::size_t size, bool check_length) {
      scan_elements(operation, c, data, count, kind, size, op, check_length, exclusive);
    });
  });
}

}  // namespace mpidist::detail
