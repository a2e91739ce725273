// Object collectives: C++ values (anything Boost.Serialization can carry) between ranks, what
// speechbrain's ddp_broadcast/ddp_all_reduce, ignite's broadcast/all_gather/all_reduce and
// axolotl's compute_and_broadcast & co. do for Python objects.
//
// How values travel (detail/object_codec.hpp):
//  * trivially copyable types (int, double, bool, std::array<float, 3>, plain structs) are their
//    own bytes: one fixed-size message, no header;
//  * std::vector and std::string of trivially copyable elements send their elements' bytes in
//    place: a 256-byte frame (size, type check; the bytes themselves when they fit), then, for a
//    larger payload, its bytes straight from the sender's memory into the receiver's;
//  * everything else is serialized once with Boost.Serialization (binary, arrays as blocks) into
//    one buffer, sent the same way. Include the boost/serialization/*.hpp header of each
//    container you send (map.hpp, vector.hpp, string.hpp ...); std::optional, std::variant and
//    std::tuple work out of the box.
// Payloads past INT_MAX bytes are chunked; gathers exchange sizes first, then MPI_Gatherv /
// MPI_Allgatherv. Every rank must call the same function with the same type and root.
//
// Failures: a root outside [0, world size) is an Error on every rank before any message; a value
// that fails to serialize, or a callback that throws, is an Error on every rank ("rank R failed:
// ...": every rank sees every sender's frame); a payload that is not a valid T (another type, a
// truncated or corrupt archive) is an Error on the rank that received it, raised before anything
// is allocated for it.
//
// World size 1, and inside a MainProcessContext (main-process-only code, where the other ranks
// are not listening; speechbrain skips communication there too): no message is sent, each
// function acts as in a world of this one process. The per-function notes say what it returns.
#pragma once

#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpidist/detail/object_codec.hpp"
#include "mpidist/detail/object_reduce.hpp"
#include "mpidist/detail/object_std_types.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"
#include "mpidist/reduce_op.hpp"

namespace mpidist {

/// Every rank gets root's `value` (speechbrain `ddp_broadcast`, ignite `broadcast`). The other
/// ranks' `value` is ignored. Solo: returns `value`.
template <detail::ObjectValue T>
[[nodiscard]] T broadcast(const T& value, int root = 0) {
  const auto c = detail::object_comm("broadcast", root);
  if (c.solo()) return value;
  if constexpr (detail::ByteCopyable<T>) {
    T result = value;
    detail::broadcast_fixed(c, std::addressof(result), sizeof(T), root);
    return result;
  } else {
    auto received =
        detail::broadcast_object("broadcast", c, &value, nullptr, root, detail::ValueSink<T>("broadcast", root));
    return received ? std::move(*received) : value;
  }
}

/// broadcast() of a value the caller gives up: root's value is moved through instead of copied,
/// and the other ranks receive into its memory where they can (a std::vector or std::string of
/// the size root sends is neither reallocated nor zero-filled). For repeated broadcasts into
/// the same buffer: `weights = mpidist::broadcast(std::move(weights), root);`
template <detail::ObjectValue T>
[[nodiscard]] T broadcast(T&& value, int root = 0) {
  const auto c = detail::object_comm("broadcast", root);
  if (c.solo()) return std::move(value);
  if constexpr (detail::ByteCopyable<T>) {
    detail::broadcast_fixed(c, std::addressof(value), sizeof(T), root);
    return std::move(value);
  } else {
    const bool is_root = c.rank == root;
    auto received = detail::broadcast_object(
        "broadcast", c, &value, nullptr, root,
        is_root ? detail::ValueSink<T>("broadcast", root) : detail::ValueSink<T>("broadcast", root, std::move(value)));
    return received ? std::move(*received) : std::move(value);
  }
}

/// Every rank's `value`, indexed by rank, on every rank (ignite `all_gather` of numbers and
/// strings). Solo: `{value}`.
template <detail::ObjectValue T>
[[nodiscard]] std::vector<T> all_gather(const T& value) {
  const auto c = detail::object_comm("all_gather");
  if (c.solo()) return {value};
  if constexpr (detail::ByteCopyable<T>) {
    std::vector<std::byte> bytes(sizeof(T) * static_cast<std::size_t>(c.size));
    detail::all_gather_fixed(c, std::addressof(value), bytes.data(), sizeof(T));
    return detail::values_from_bytes<T>(bytes.data(), c.size);
  } else {
    const auto g = detail::gather_object("all_gather", c, &value, nullptr, -1);
    return detail::decode_all("all_gather", c, g, value);
  }
}

/// Every rank's `value`, indexed by rank, on root; std::nullopt on the other ranks. Solo:
/// `{value}` (this process is the root of its world of one).
template <detail::ObjectValue T>
[[nodiscard]] std::optional<std::vector<T>> gather(const T& value, int root = 0) {
  const auto c = detail::object_comm("gather", root);
  if (c.solo()) return std::vector<T>{value};
  if constexpr (detail::ByteCopyable<T>) {
    std::vector<std::byte> bytes(c.rank == root ? sizeof(T) * static_cast<std::size_t>(c.size) : 0);
    detail::gather_fixed(c, std::addressof(value), bytes.data(), sizeof(T), root);
    if (c.rank != root) return std::nullopt;
    return detail::values_from_bytes<T>(bytes.data(), c.size);
  } else {
    const auto g = detail::gather_object("gather", c, &value, nullptr, root);
    if (c.rank != root) return std::nullopt;
    return detail::decode_all("gather", c, g, value);
  }
}

/// Rank r gets root's `values[r]`; root's `values` must hold one value per rank (else Error on
/// every rank), the other ranks' `values` is ignored. Solo: `values[rank()]`, with the same
/// size check.
template <detail::ObjectValue T>
[[nodiscard]] T scatter(const std::vector<T>& values, int root = 0) {
  const char* operation = "scatter";
  const auto c = detail::object_comm(operation, root);
  const bool sending = c.solo() || c.rank == root;
  std::exception_ptr failure;
  if (sending && values.size() != static_cast<std::size_t>(c.size))
    failure = std::make_exception_ptr(Error(
        operation, "root has " + std::to_string(values.size()) + " values for world size " + std::to_string(c.size)));
  if (c.solo()) {
    if (failure) std::rethrow_exception(failure);
    return values[static_cast<std::size_t>(c.rank)];
  }
  // Root lays every rank's part back to back in one buffer (the transport scatters from it).
  std::vector<char> buffer;
  std::vector<detail::Payload> parts;
  std::string text;
  const std::uint64_t tag = detail::type_tag<T>();
  if (sending) {
    if (!failure) failure = detail::capture([&] { detail::encode_parts(values, buffer, parts, tag); });
    if (failure) parts.assign(static_cast<std::size_t>(c.size), detail::make_payload({}, failure, text, tag));
  }
  detail::ValueSink<T> sink(operation, root);
  detail::scatter_payload(operation, c, reinterpret_cast<const std::byte*>(buffer.data()), parts, tag, sink, root);
  return sink.take();
}

/// axolotl `compute_and_broadcast`: `fn()` runs on root only (inside a MainProcessContext, so
/// mpidist calls in it stay local) and its result reaches every rank. An exception in `fn`
/// becomes Error on every rank ("rank R failed: ..."). Solo: runs `fn` here.
template <class F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires detail::ObjectValue<R>
[[nodiscard]] R compute_and_broadcast(F&& fn, int root = 0) {
  const char* operation = "compute_and_broadcast";
  const auto c = detail::object_comm(operation, root);
  std::optional<R> result;
  std::exception_ptr failure;
  if (c.solo() || c.rank == root) {
    MainProcessContext main_only;
    failure = detail::capture([&] { result.emplace(std::invoke(fn)); });
  }
  if (c.solo()) {
    if (failure) detail::throw_local_failure(operation, c.rank, failure);
    return std::move(*result);
  }
  auto received = detail::broadcast_object<R>(operation, c, result ? &*result : nullptr, failure, root,
                                              detail::ValueSink<R>(operation, root));
  return received ? std::move(*received) : std::move(*result);
}

/// axolotl `gather_from_all_ranks`: `fn()` runs on every rank; root gets the results indexed by
/// rank, the others std::nullopt. An exception in `fn` on any rank becomes Error on every rank.
/// Solo: `{fn()}`.
template <class F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires detail::ObjectValue<R>
[[nodiscard]] std::optional<std::vector<R>> gather_from_all_ranks(F&& fn, int root = 0) {
  const char* operation = "gather_from_all_ranks";
  const auto c = detail::object_comm(operation, root);
  std::optional<R> mine;
  std::exception_ptr failure = detail::capture([&] { mine.emplace(std::invoke(fn)); });
  if (c.solo()) {
    if (failure) detail::throw_local_failure(operation, c.rank, failure);
    return std::vector<R>{std::move(*mine)};
  }
  const auto g = detail::gather_object<R>(operation, c, mine ? &*mine : nullptr, failure, root);
  if (c.rank != root) return std::nullopt;
  return detail::decode_all(operation, c, g, *mine);
}

/// axolotl `gather_scalar_from_all_ranks`: gather_from_all_ranks for an `fn` that returns an
/// arithmetic scalar (a loss, a token count).
template <class F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires std::is_arithmetic_v<R>
[[nodiscard]] std::optional<std::vector<R>> gather_scalar_from_all_ranks(F&& fn, int root = 0) {
  return gather_from_all_ranks(std::forward<F>(fn), root);
}

/// axolotl `reduce_and_broadcast`: `fn1()` runs on every rank, rank 0 calls `fn2(values)` on
/// all of them (indexed by rank, inside a MainProcessContext) and its result reaches every rank.
/// An exception in `fn1` on any rank, or in `fn2`, becomes Error on every rank. Solo:
/// `fn2({fn1()})`.
template <class F1, class F2, class V = std::remove_cvref_t<std::invoke_result_t<F1&>>,
          class R = std::remove_cvref_t<std::invoke_result_t<F2&, std::vector<V>>>>
requires detail::ObjectValue<V> && detail::ObjectValue<R>
[[nodiscard]] R reduce_and_broadcast(F1&& fn1, F2&& fn2) {
  const char* operation = "reduce_and_broadcast";
  const auto c = detail::object_comm(operation, 0);
  std::optional<V> mine;
  std::exception_ptr failure = detail::capture([&] { mine.emplace(std::invoke(fn1)); });
  if (c.solo()) {
    std::optional<R> result;
    if (!failure)
      failure = detail::capture([&] { result.emplace(std::invoke(fn2, std::vector<V>{std::move(*mine)})); });
    if (failure) detail::throw_local_failure(operation, c.rank, failure);
    return std::move(*result);
  }
  const auto g = detail::gather_object<V>(operation, c, mine ? &*mine : nullptr, failure, 0);
  std::optional<R> result;
  failure = nullptr;
  if (c.rank == 0) {
    // Decoding failures count as fn2's: every rank must hear about them.
    MainProcessContext main_only;
    failure = detail::capture([&] { result.emplace(std::invoke(fn2, detail::decode_all(operation, c, g, *mine))); });
  }
  auto received = detail::broadcast_object<R>(operation, c, result ? &*result : nullptr, failure, 0,
                                              detail::ValueSink<R>(operation, 0));
  return received ? std::move(*received) : std::move(*result);
}

/// ignite `all_reduce`, speechbrain `ddp_all_reduce`: every rank gets the reduction of all
/// ranks' `value` under `op`, element-wise for std::vector / std::array (same length on every
/// rank, else Error on every rank), key-wise for a metrics map (same keys on every rank, else
/// Error on every rank naming the keys each rank lacks).
///  * Integers reduce exactly in their own type (no detour through float); Avg is the sum
///    divided by the world size, truncated toward zero.
///  * And / Or are logical: the result is 1 or 0 (true or false).
///  * bool reduces as 0/1: Sum, Max, Or mean "any"; Product, Min, And, Avg (truncated) "all".
/// Solo: the reduction over this rank alone (`value`, with And/Or mapped to 0/1).
template <detail::Reducible T>
[[nodiscard]] T all_reduce(T value, ReduceOp op = ReduceOp::Sum) {
  using detail::arith_kind_v;
  if constexpr (std::is_arithmetic_v<T>) {
    detail::all_reduce_elements(&value, 1, arith_kind_v<T>, sizeof(T), op, false);
  } else if constexpr (std::is_same_v<T, std::map<std::string, double>>) {
    detail::all_reduce_metrics(value, op);
  } else {
    using E = typename T::value_type;
    constexpr bool check_length = !detail::is_std_array<T>::value;  // an array's length is static
    if constexpr (std::is_same_v<E, bool> && check_length) {
      // std::vector<bool> packs bits; reduce a byte per element.
      std::vector<unsigned char> bytes(value.begin(), value.end());
      detail::all_reduce_elements(bytes.data(), bytes.size(), detail::ArithKind::Bool, 1, op, true);
      std::copy(bytes.begin(), bytes.end(), value.begin());
    } else {
      detail::all_reduce_elements(value.data(), value.size(), arith_kind_v<E>, sizeof(E), op, check_length);
    }
  }
  return value;
}

}  // namespace mpidist
