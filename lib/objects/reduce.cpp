// all_reduce and reduce with a ReduceOp for objects: arithmetic elements exactly in their own MPI
// datatype, metrics key-wise.
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/mpi_check.hpp"
#include "core/text_collectives.hpp"
#include "core/group.hpp"
#include "mpi/comparison_ops.hpp"
#include "watch/agreement.hpp"
#include "watch/flight_recorder.hpp"
#include "mpidist/detail/object_reduce.hpp"
#include "mpidist/detail/object_transport.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace {

MPI_Datatype datatype_of(ArithKind kind, std::size_t size) {
  switch (kind) {
    case ArithKind::Bool:
      return MPI_UINT8_T;
    case ArithKind::Floating:
      return size == sizeof(float) ? MPI_FLOAT : size == sizeof(double) ? MPI_DOUBLE : MPI_LONG_DOUBLE;
    case ArithKind::Signed:
      return size == 1 ? MPI_INT8_T : size == 2 ? MPI_INT16_T : size == 4 ? MPI_INT32_T : MPI_INT64_T;
    case ArithKind::Unsigned:
      return size == 1 ? MPI_UINT8_T : size == 2 ? MPI_UINT16_T : size == 4 ? MPI_UINT32_T : MPI_UINT64_T;
    case ArithKind::Complex:  // MPI_SUM and MPI_PROD are defined on them
      return size == sizeof(std::complex<float>) ? MPI_C_FLOAT_COMPLEX : MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

// Calls fn with a null pointer of the C++ element type that (kind, size) names.
template <class F>
void with_element_type(ArithKind kind, std::size_t size, F&& fn) {
  switch (kind) {
    case ArithKind::Bool:
      return fn(static_cast<std::uint8_t*>(nullptr));
    case ArithKind::Floating:
      if (size == sizeof(float)) return fn(static_cast<float*>(nullptr));
      if (size == sizeof(double)) return fn(static_cast<double*>(nullptr));
      return fn(static_cast<long double*>(nullptr));
    case ArithKind::Signed:
      if (size == 1) return fn(static_cast<std::int8_t*>(nullptr));
      if (size == 2) return fn(static_cast<std::int16_t*>(nullptr));
      if (size == 4) return fn(static_cast<std::int32_t*>(nullptr));
      return fn(static_cast<std::int64_t*>(nullptr));
    case ArithKind::Unsigned:
      if (size == 1) return fn(static_cast<std::uint8_t*>(nullptr));
      if (size == 2) return fn(static_cast<std::uint16_t*>(nullptr));
      if (size == 4) return fn(static_cast<std::uint32_t*>(nullptr));
      return fn(static_cast<std::uint64_t*>(nullptr));
    case ArithKind::Complex:
      if (size == sizeof(std::complex<float>)) return fn(static_cast<std::complex<float>*>(nullptr));
      return fn(static_cast<std::complex<double>*>(nullptr));
  }
}

// bool is 0/1, so "any" is the maximum and "all" the minimum (Avg truncates to "all"); its bits
// (one byte of 0 or 1) combine as any integer's.
MPI_Op mpi_op_of(ArithKind kind, ReduceOp op) {
  const bool boolean = kind == ArithKind::Bool;
  switch (op) {
    case ReduceOp::Sum: return boolean ? MPI_MAX : MPI_SUM;
    case ReduceOp::Avg: return boolean ? MPI_MIN : MPI_SUM;
    case ReduceOp::Product: return boolean ? MPI_MIN : MPI_PROD;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::And: return boolean ? MPI_MIN : MPI_LAND;
    case ReduceOp::Or: return boolean ? MPI_MAX : MPI_LOR;
    case ReduceOp::BitAnd: return MPI_BAND;  // floating point is refused before (reduce_elements)
    case ReduceOp::BitOr: return MPI_BOR;
    case ReduceOp::BitXor: return MPI_BXOR;
  }
  return MPI_OP_NULL;
}

// What the ranks' values combine into: one result (on every rank, or on a root), or a prefix per
// rank (MPI_Scan: ranks 0..r; MPI_Exscan: ranks 0..r-1).
enum class Reach { Whole, Prefix, PrefixBefore };

// MPI_Allreduce (root < 0) or MPI_Reduce to root, or the scans, in place, in pieces under the
// message limit (each piece's elements combine on their own).
void reduce_chunked(void* data, std::size_t count, MPI_Datatype type, std::size_t element_size, MPI_Op op,
                    const ObjectComm& c, Reach reach, int root) {
  auto* bytes = static_cast<char*>(data);
  const std::size_t per_call = std::max<std::size_t>(1, max_message_bytes() / element_size);
  while (count > 0) {
    const std::size_t n = std::min(count, per_call);
    const int k = static_cast<int>(n);
    if (reach == Reach::Prefix)
      MPIDIST_MPI_CHECK(MPI_Scan(MPI_IN_PLACE, bytes, k, type, op, c.comm));
    else if (reach == Reach::PrefixBefore)
      MPIDIST_MPI_CHECK(MPI_Exscan(MPI_IN_PLACE, bytes, k, type, op, c.comm));
    else if (root < 0)
      MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bytes, k, type, op, c.comm));
    else if (c.rank == root)
      MPIDIST_MPI_CHECK(MPI_Reduce(MPI_IN_PLACE, bytes, k, type, op, root, c.comm));
    else
      MPIDIST_MPI_CHECK(MPI_Reduce(bytes, nullptr, k, type, op, root, c.comm));
    bytes += n * element_size;
    count -= n;
  }
}

// Logical And/Or of floating values: MPI defines MPI_LAND/MPI_LOR for integers only, so the
// truth values travel as bytes.
template <class T>
void logical_floating(T* values, std::size_t count, ReduceOp op, const ObjectComm& c, Reach reach, int root) {
  std::vector<std::uint8_t> truth(count);
  for (std::size_t i = 0; i < count; ++i) truth[i] = values[i] != T(0) ? 1 : 0;
  if (!c.solo())
    reduce_chunked(truth.data(), count, MPI_UINT8_T, 1, op == ReduceOp::And ? MPI_MIN : MPI_MAX, c, reach, root);
  for (std::size_t i = 0; i < count; ++i) values[i] = truth[i] != 0 ? T(1) : T(0);
}

// Rank 0's exclusive prefix, which MPI leaves unspecified: the identity of `op`, so that the prefix
// combined with a rank's own value is its inclusive prefix on every rank (0 for a sum). bool travels
// as a byte of 0 or 1, reduced by its maximum ("any") or minimum ("all").
template <class T>
T identity_of(ArithKind kind, ReduceOp op) {
  const bool all = op == ReduceOp::Product || op == ReduceOp::And || op == ReduceOp::Min || op == ReduceOp::BitAnd;
  if (kind == ArithKind::Bool) return T(all ? 1 : 0);
  if constexpr (!std::is_arithmetic_v<T>) {  // complex: sums and products only
    return T(op == ReduceOp::Product ? 1 : 0);
  } else {
    using limits = std::numeric_limits<T>;
    switch (op) {
      case ReduceOp::Product:
      case ReduceOp::And: return T(1);
      case ReduceOp::Min: return limits::has_infinity ? limits::infinity() : limits::max();
      case ReduceOp::Max: return limits::has_infinity ? -limits::infinity() : limits::lowest();
      case ReduceOp::BitAnd:
        if constexpr (std::is_integral_v<T>) return static_cast<T>(~T(0));  // every bit set
        return T(0);  // floating point takes no bitwise op (refused before)
      default: return T(0);  // Sum, Or, BitOr, BitXor
    }
  }
}

// A bad argument found before any message: the ranks learn whether all of them failed alike (they
// then stay in step; the Error is `why`), or whether some went on into the call without this one.
[[noreturn]] void refuse_before_any_message(const char* operation, const ObjectComm& c, std::size_t count, ReduceOp op,
                                            int root, const std::string& why) {
  const auto refused = std::make_exception_ptr(Error(operation, why));
  Group* group = c.call.group();
  if (c.solo() || group == nullptr) std::rethrow_exception(refused);
  vote_on_local_failure(*group, Fingerprint{operation, count, 0, -1, root, static_cast<int>(op)}, refused);
}

// Every rank passes its count; Error on every rank when they differ.
void check_same_length(const char* operation, const ObjectComm& c, std::size_t count) {
  const Extremes length = extremes_across_ranks(c.comm, count);
  if (length.same()) return;
  fails_in_step(c);
  throw Error(operation, "lengths differ across ranks (shortest " + std::to_string(length.smallest) +
                             ", longest " + std::to_string(length.largest) + " elements)");
}

// Rank r's keys as one string (length-prefixed, so any key survives).
std::string join_keys(const std::vector<std::string>& keys) {
  std::string joined;
  for (const auto& key : keys) joined += std::to_string(key.size()) + ":" + key;
  return joined;
}

std::vector<std::string> split_keys(const std::string& joined) {
  std::vector<std::string> keys;
  for (std::size_t at = 0; at < joined.size();) {
    const std::size_t colon = joined.find(':', at);
    const std::size_t length = std::stoull(joined.substr(at, colon - at));
    keys.push_back(joined.substr(colon + 1, length));
    at = colon + 1 + length;
  }
  return keys;
}

// "rank 1 lacks 'acc', 'loss'; rank 2 lacks 'acc'", from every rank's key list.
std::string describe_missing_keys(const std::vector<std::string>& joined_per_rank) {
  std::vector<std::set<std::string>> keys;
  std::set<std::string> all;
  for (const auto& joined : joined_per_rank) {
    const auto list = split_keys(joined);
    keys.emplace_back(list.begin(), list.end());
    all.insert(list.begin(), list.end());
  }
  std::string text;
  for (std::size_t r = 0; r < keys.size(); ++r) {
    std::string missing;
    for (const auto& key : all)
      if (keys[r].count(key) == 0) missing += (missing.empty() ? "'" : ", '") + key + "'";
    if (!missing.empty()) text += (text.empty() ? "rank " : "; rank ") + std::to_string(r) + " lacks " + missing;
  }
  return text;
}

}  // namespace

void agree_on_rows(const char* operation, const ObjectComm& c, const std::vector<std::size_t>& lengths,
                   bool check_lengths) {
  if (c.solo()) return;
  const auto differ = [&](const std::string& what, const Extremes& e) {
    fails_in_step(c);
    throw Error(operation, what + " is " + std::to_string(e.smallest) + " on some ranks and " + std::to_string(e.largest) +
                               " on others; every rank's rows must have the same shape");
  };
  // The count first: only ranks with as many rows can compare their lengths in one reduction.
  if (const Extremes count = extremes_across_ranks(c.comm, lengths.size()); !count.same()) differ("the row count", count);
  if (!check_lengths) return;
  const std::vector<std::uint64_t> each(lengths.begin(), lengths.end());
  const auto extremes = extremes_across_ranks(c.comm, each);
  for (std::size_t i = 0; i < extremes.size(); ++i)
    if (!extremes[i].same()) differ("the length of row " + std::to_string(i), extremes[i]);
}

namespace {

// reduce_elements and scan_elements: the refusals, the length check, MPI's op in the element's own
// type, then what MPI leaves to do (logical values as 0/1, Avg's division, rank 0's exclusive prefix).
void combine_elements(const char* operation, const ObjectComm& c, void* data, std::size_t count, ArithKind kind,
                      std::size_t element_size, ReduceOp op, bool check_length, Reach reach, int root) {
  if (reach != Reach::Whole && op == ReduceOp::Avg)
    refuse_before_any_message(operation, c, count, op, root,
                              "reduction 'avg' has no prefix form: scan with sum and divide by the number of ranks "
                              "it covered (rank() + 1 for scan, rank() for exscan)");
  if (kind == ArithKind::Complex && op != ReduceOp::Sum && op != ReduceOp::Product && op != ReduceOp::Avg)
    refuse_before_any_message(operation, c, count, op, root,
                              "reduction '" + std::string(to_string(op)) +
                                  "' is not defined on complex numbers, which take sum, prod or avg (min and max: "
                                  "complex numbers have no order; and, or: pass a function)");
  if (kind == ArithKind::Floating && bitwise(op))
    refuse_before_any_message(operation, c, count, op, root,
                              "reduction '" + std::string(to_string(op)) +
                                  "' combines the bits of integers and bool, not of floating-point numbers");
  if (!c.solo() && check_length) check_same_length(operation, c, count);
  with_element_type(kind, element_size, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* values = static_cast<T*>(data);
    const bool logical = op == ReduceOp::And || op == ReduceOp::Or;
    if (logical && kind == ArithKind::Floating) {
      logical_floating(values, count, op, c, reach, root);
    } else {
      if (!c.solo()) {
        const MPI_Datatype type = datatype_of(kind, element_size);
        reduce_chunked(data, count, type, element_size, mpi::comparison_op(mpi_op_of(kind, op), type), c, reach, root);
      }
      if (logical) {  // MPI's result already is 0/1; alone, map the value to its truth
        for (std::size_t i = 0; i < count; ++i) values[i] = values[i] != T(0) ? T(1) : T(0);
      } else if (op == ReduceOp::Avg && kind != ArithKind::Bool) {
        const T ranks = static_cast<T>(c.solo() ? 1 : c.size);  // solo: the average of this rank alone
        for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / ranks);
      }
    }
    if (reach == Reach::PrefixBefore && (c.solo() || c.rank == 0)) std::fill_n(values, count, identity_of<T>(kind, op));
  });
}

}  // namespace

void reduce_elements(const char* operation, const ObjectComm& c, void* data, std::size_t count, ArithKind kind,
                     std::size_t element_size, ReduceOp op, bool check_length, int root) {
  combine_elements(operation, c, data, count, kind, element_size, op, check_length, Reach::Whole, root);
}

void scan_elements(const char* operation, const ObjectComm& c, void* data, std::size_t count, ArithKind kind,
                   std::size_t element_size, ReduceOp op, bool check_length, bool exclusive) {
  combine_elements(operation, c, data, count, kind, element_size, op, check_length,
                   exclusive ? Reach::PrefixBefore : Reach::Prefix, -1);
}

void reduce_metrics(const char* operation, const ObjectComm& c, const std::vector<std::string>& keys, void* values,
                    ArithKind kind, std::size_t element_size, ReduceOp op, int root) {
  if (!c.solo()) {
    const std::string joined = join_keys(keys);
    if (!extremes_across_ranks(c.comm, fnv1a(joined)).same()) {  // some rank has other keys: every rank sees it
      fails_in_step(c);
      throw Error(operation,
                  "metric keys differ across ranks: " + describe_missing_keys(all_gather_text(c.comm, joined)));
    }
  }
  reduce_elements(operation, c, values, keys.size(), kind, element_size, op, false, root);
}

}  // namespace mpidist::detail
