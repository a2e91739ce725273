// Object collectives: C++ values (anything Boost.Serialization can carry) between ranks, what
// speechbrain's ddp_broadcast/ddp_all_reduce, ignite's broadcast/all_gather/all_reduce and
// axolotl's compute_and_broadcast & co. do for Python objects.
//
// How values travel (detail/object_codec.hpp): every payload starts with a 256-byte frame (size,
// the type's fingerprint, a failure flag; the bytes themselves when they fit in 232), then, for a
// larger payload, its bytes straight from the sender's memory into the receiver's. A frame of
// one size whatever the type lets a rank that expects another type name both before decoding.
//  * trivially copyable types (int, double, bool, std::array<float, 3>, plain structs) are their
//    own bytes;
//  * std::vector and std::string of trivially copyable elements send their elements' bytes in
//    place;
//  * everything else is serialized once with Boost.Serialization (binary, arrays as blocks) into
//    one buffer. Include the boost/serialization/*.hpp header of each
//    container you send (map.hpp, vector.hpp, string.hpp ...); std::optional, std::variant and
//    std::tuple work out of the box.
// Payloads past INT_MAX bytes are chunked; gathers exchange sizes first, then MPI_Gatherv /
// MPI_Allgatherv. Every rank must call the same function with the same type and root.
//
// Every function has a world form and a form taking a Communicator first (Boost.MPI's order):
// roots and ranks are then ranks within that group, and "world" below means the group. Both forms
// share one implementation over a detail::ObjectComm; errors name the communicator
// ("broadcast on world/split(color 1): ..."), and a null Communicator is an Error.
//
// Failures: a root outside [0, group size) is an Error on every rank before any message; a value
// that fails to serialize, or a callback that throws, is an Error on every rank ("rank R failed:
// ...": every rank sees every sender's frame); a payload that is not a valid T (another type, a
// truncated or corrupt archive) is an Error on the rank that received it, raised before anything
// is allocated for it; another type is named with both types ("rank 0 sent std::string where this
// rank expects int").
//
// A group of one, and inside a MainProcessContext (main-process-only code, where the other ranks
// are not listening; speechbrain skips communication there too): no message is sent, each
// function acts as in a world of this one process. The per-function notes say what it returns.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpidist/collectives.hpp"
#include "mpidist/communicator.hpp"
#include "mpidist/detail/object_codec.hpp"
#include "mpidist/detail/object_reduce.hpp"
#include "mpidist/detail/object_std_types.hpp"
#include "mpidist/detail/reduce_functions.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"
#include "mpidist/p2p.hpp"
#include "mpidist/reduce_op.hpp"

namespace mpidist {

namespace detail {

/// Whatever a ReduceOp reduces as a tensor instead: a span, a BufferView, or anything converting
/// to one. The refusing overloads below must not take those from collectives.hpp.
template <class T>
concept NotReducibleObject = ObjectValue<T> && !Reducible<T> && !std::is_convertible_v<const T&, BufferView>;

/// A non-const container of tensor elements that the object forms do not reduce
/// (std::valarray<double>, std::vector<float16>): a ReduceOp reduces it in place as a tensor.
template <class C>
concept TensorOnlyContainer = WritableContainer<C> && !Reducible<C>;

/// A std::vector or std::array of tensor elements that a ReduceOp cannot reduce as an object
/// (float16, bfloat16): the refusal names the tensor form instead of a function.
template <class T>
struct tensor_container : std::false_type {};
template <class E, class A>
struct tensor_container<std::vector<E, A>> : std::bool_constant<Element<E>> {};
template <class E, std::size_t N>
struct tensor_container<std::array<E, N>> : std::bool_constant<Element<E>> {};

template <class T>
inline constexpr bool refused_op_v = false;  // dependent: the static_asserts below fire only when chosen

/// The refusal of a ReduceOp on a type it cannot reduce: a compile error that says what to pass.
template <class T>
constexpr void refuse_reduce_op() {
  if constexpr (tensor_container<T>::value)
    static_assert(refused_op_v<T>,
                  "mpidist: a ReduceOp reduces a std::vector/std::array of float16 or bfloat16 as a tensor: "
                  "pass mpidist::all_reduce(std::span(v), op) (in place), or a function for the object form");
  else
    static_assert(refused_op_v<T>,
                  "mpidist: a ReduceOp reduces numbers, std::vector/std::array of numbers, a std::vector of "
                  "them (rows) and maps of numbers (std::map/std::unordered_map with string or integer keys) only; for this type pass a "
                  "function: std::plus<>{} (mpidist::all_reduce(value, std::plus<>{})) or a lambda "
                  "[](T a, T b) { return ...; }");
}


// One implementation per function, on the communicator `c` the world or Communicator form chose.
// Each names c's communicator in the Errors it raises.

template <ObjectValue T>
T broadcast_on(const ObjectComm& c, const T& value, int root) {
  return naming_errors(*c.name, [&]() -> T {
    if (c.solo()) return value;
    auto received = broadcast_object("broadcast", c, &value, nullptr, root, ValueSink<T>("broadcast", root));
    return received ? std::move(*received) : value;
  });
}

template <ObjectValue T>
T broadcast_moved_on(const ObjectComm& c, T&& value, int root) {
  return naming_errors(*c.name, [&]() -> T {
    if (c.solo()) return std::move(value);
    const bool is_root = c.rank == root;
    auto received = broadcast_object(
        "broadcast", c, &value, nullptr, root,
        is_root ? ValueSink<T>("broadcast", root) : ValueSink<T>("broadcast", root, std::move(value)));
    return received ? std::move(*received) : std::move(value);
  });
}

template <ObjectValue T>
std::vector<T> all_gather_on(const ObjectComm& c, const T& value) {
  return naming_errors(*c.name, [&]() -> std::vector<T> {
    if (c.solo()) return {value};
    const auto g = gather_object("all_gather", c, &value, nullptr, -1);
    return decode_all("all_gather", c, g, value);
  });
}

template <ObjectValue T>
std::optional<std::vector<T>> gather_on(const ObjectComm& c, const T& value, int root) {
  return naming_errors(*c.name, [&]() -> std::optional<std::vector<T>> {
    if (c.solo()) return std::vector<T>{value};
    const auto g = gather_object("gather", c, &value, nullptr, root);
    if (c.rank != root) return std::nullopt;
    return decode_all("gather", c, g, value);
  });
}

template <ObjectValue T>
T scatter_on(const ObjectComm& c, const std::vector<T>& values, int root) {
  const char* operation = "scatter";
  return naming_errors(*c.name, [&]() -> T {
    const bool sending = c.solo() || c.rank == root;
    std::exception_ptr failure;
    if (sending && values.size() != static_cast<std::size_t>(c.size))
      failure = std::make_exception_ptr(Error(operation, "root has " + std::to_string(values.size()) + " values for " +
                                                             (*c.name == "world" ? "world size " : "group size ") +
                                                             std::to_string(c.size)));
    if (c.solo()) {
      if (failure) std::rethrow_exception(failure);
      return values[static_cast<std::size_t>(c.rank)];
    }
    // Root lays every rank's part back to back in one buffer (the transport scatters from it).
    std::vector<char> buffer;
    std::vector<Payload> parts;
    std::string text;
    const std::uint64_t tag = type_tag<T>();
    if (sending) {
      if (!failure) failure = capture([&] { encode_parts(values, buffer, parts, tag); });
      if (failure) parts.assign(static_cast<std::size_t>(c.size), make_payload({}, failure, text, tag));
    }
    ValueSink<T> sink(operation, root);
    scatter_payload(operation, c, reinterpret_cast<const std::byte*>(buffer.data()), parts, tag, sink, root);
    return sink.take();
  });
}

template <class F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
R compute_and_broadcast_on(const ObjectComm& c, F& fn, int root) {
  const char* operation = "compute_and_broadcast";
  return naming_errors(*c.name, [&]() -> R {
    std::optional<R> result;
    std::exception_ptr failure;
    if (c.solo() || c.rank == root) {
      MainProcessContext main_only;
      failure = capture([&] { result.emplace(std::invoke(fn)); });
    }
    if (c.solo()) {
      if (failure) throw_local_failure(operation, c.rank, failure);
      return std::move(*result);
    }
    auto received = broadcast_object<R>(operation, c, result ? &*result : nullptr, failure, root,
                                        ValueSink<R>(operation, root));
    return received ? std::move(*received) : std::move(*result);
  });
}

template <class F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
std::optional<std::vector<R>> gather_from_all_ranks_on(const ObjectComm& c, F& fn, int root) {
  const char* operation = "gather_from_all_ranks";
  return naming_errors(*c.name, [&]() -> std::optional<std::vector<R>> {
    std::optional<R> mine;
    std::exception_ptr failure = capture([&] { mine.emplace(std::invoke(fn)); });
    if (c.solo()) {
      if (failure) throw_local_failure(operation, c.rank, failure);
      return std::vector<R>{std::move(*mine)};
    }
    const auto g = gather_object<R>(operation, c, mine ? &*mine : nullptr, failure, root);
    if (c.rank != root) return std::nullopt;
    return decode_all(operation, c, g, *mine);
  });
}

template <class F1, class F2, class V = std::remove_cvref_t<std::invoke_result_t<F1&>>,
          class R = std::remove_cvref_t<std::invoke_result_t<F2&, std::vector<V>>>>
R reduce_and_broadcast_on(const ObjectComm& c, F1& fn1, F2& fn2) {
  const char* operation = "reduce_and_broadcast";
  return naming_errors(*c.name, [&]() -> R {
    std::optional<V> mine;
    std::exception_ptr failure = capture([&] { mine.emplace(std::invoke(fn1)); });
    if (c.solo()) {
      std::optional<R> result;
      if (!failure) failure = capture([&] { result.emplace(std::invoke(fn2, std::vector<V>{std::move(*mine)})); });
      if (failure) throw_local_failure(operation, c.rank, failure);
      return std::move(*result);
    }
    const auto g = gather_object<V>(operation, c, mine ? &*mine : nullptr, failure, 0);
    std::optional<R> result;
    failure = nullptr;
    if (c.rank == 0) {
      // Decoding failures count as fn2's: every rank must hear about them.
      MainProcessContext main_only;
      failure = capture([&] { result.emplace(std::invoke(fn2, decode_all(operation, c, g, *mine))); });
    }
    auto received =
        broadcast_object<R>(operation, c, result ? &*result : nullptr, failure, 0, ValueSink<R>(operation, 0));
    return received ? std::move(*received) : std::move(*result);
  });
}

/// In place: `value` becomes the reduction under `op` on every rank (root < 0) or on root.
template <Reducible T>
void reduce_value_on(const char* operation, const ObjectComm& c, T& value, ReduceOp op, int root) {
  naming_errors(*c.name, [&] {
    if constexpr (metrics_map<T>::value) {
      reduce_metrics_map(operation, c, value, op, root);
    } else if constexpr (rows_of_numbers<T>::value) {
      reduce_rows(operation, c, value, op, root);
    } else {  // a Number, a std::vector or std::array of them
      on_numbers(value, [&](void* data, std::size_t count, ArithKind kind, std::size_t size, bool check_length) {
        reduce_elements(operation, c, data, count, kind, size, op, check_length, root);
      });
    }
  });
}

/// Reduces in place a non-const lvalue container, as the value form would compute it, writing the
/// result back: on every rank (root < 0), or on root only (the other ranks' values unchanged).
template <class C>
void reduce_in_place_on(const char* operation, const ObjectComm& c, C& values, ReduceOp op, int root) {
  if (root < 0 || c.solo() || c.rank == root) return reduce_value_on(operation, c, values, op, root);
  C scratch = values;  // MPI leaves a non-root's send buffer unspecified after the Avg division
  reduce_value_on(operation, c, scratch, op, root);
}

// Reduction with the caller's function: gather to one rank, fold there in rank order, send on.
//
// Why not a tree, or MPI_Op_create(commute = false), which also keep rank order? An MPI user op
// is a C callback without a context pointer that must not throw, runs wherever MPI likes, and
// sees raw bytes: serialized values and fn's exceptions could not travel through it. A
// rank-ordered tree would run fn on log2(p) ranks in parallel, but needs point-to-point payload
// transport and a failure could start on any rank. Gathering reuses the framed transport as it
// is (type check, failure frames, chunking) and runs fn on one rank only, so its exception has
// one origin and travels in the frame that is sent anyway. The cost is p - 1 calls of fn on that
// rank: object reductions carry metrics and small results, where the messages dominate. A small
// trivially copyable T costs one MPI_Gather of its bytes and, for all_reduce, one 256-byte
// MPI_Bcast frame carrying the result (or the failure).
//
// The folding rank runs fn inside a MainProcessContext (like reduce_and_broadcast's fn2), so
// mpidist calls in fn stay local. `root` < 0: all_reduce (rank 0 folds, then broadcasts);
// else reduce to root, followed by a frame of root's outcome, so an exception in fn (or a value
// root cannot decode) is an Error on every rank.
template <ObjectValue T, class F>
std::optional<T> fold_on(const char* operation, const ObjectComm& c, const T& value, F& fn, int root) {
  return naming_errors(*c.name, [&]() -> std::optional<T> {
    const bool everywhere = root < 0;
    if (c.solo()) return value;  // the reduction of one value is that value: fn is not called
    const int folder = everywhere ? 0 : root;
    const GatheredPayloads gathered = gather_object(operation, c, &value, nullptr, folder);
    std::optional<T> result;
    std::exception_ptr failure;
    if (c.rank == folder) {
      MainProcessContext main_only;
      failure = capture([&] {
        auto value_of = [&](int r) -> T {
          if (r == c.rank) return value;
          return decode<T>(operation, r, gathered.data(r), gathered.size(r));
        };
        // ((v0 op v1) op v2) ...: the same result on every rank, whether or not fn commutes.
        T acc = value_of(0);
        for (int r = 1; r < c.size; ++r) acc = static_cast<T>(std::invoke(fn, std::move(acc), value_of(r)));
        result.emplace(std::move(acc));
      });
    }
    if (everywhere) {
      auto received = broadcast_object<T>(operation, c, result ? &*result : nullptr, failure, folder,
                                          ValueSink<T>(operation, folder));
      return received ? std::move(received) : std::move(result);
    }
    const bool done = true;
    (void)broadcast_object<bool>(operation, c, &done, failure, folder, ValueSink<bool>(operation, folder));
    return result;
  });
}

// Prefix reductions with the caller's function, as fold_on above: gather to rank 0, fold there in
// rank order keeping each prefix, scatter each rank its own (MPI_Scan's user ops have fold_on's
// limits). fn runs on rank 0 only (p - 1 calls, p - 2 for exscan), inside a MainProcessContext; an
// exception in it, or in encoding the prefixes, travels in every rank's part: an Error on every
// rank. `exclusive`: rank r gets the prefix of ranks 0..r-1, rank 0 nothing (a function has no
// identity).
template <ObjectValue T, class F>
std::optional<T> prefix_fold_on(const char* operation, const ObjectComm& c, const T& value, F& fn, bool exclusive) {
  return naming_errors(*c.name, [&]() -> std::optional<T> {
    if (c.solo()) return exclusive ? std::nullopt : std::optional<T>(value);
    const GatheredPayloads gathered = gather_object(operation, c, &value, nullptr, 0);
    std::vector<char> buffer;
    std::vector<Payload> parts;
    std::string text;
    const std::uint64_t tag = type_tag<T>();
    if (c.rank == 0) {
      MainProcessContext main_only;
      const std::exception_ptr failure = capture([&] {
        auto value_of = [&](int r) -> T { return decode<T>(operation, r, gathered.data(r), gathered.size(r)); };
        // prefixes[k]: v0 fn ... fn vk. exscan needs none with the last rank's value, and hands
        // rank r prefixes[r - 1] (rank 0 a copy of its own value, which it drops).
        const int last = exclusive ? c.size - 2 : c.size - 1;
        std::vector<T> prefixes{value};
        prefixes.reserve(static_cast<std::size_t>(c.size));
        for (int r = 1; r <= last; ++r)
          prefixes.push_back(static_cast<T>(std::invoke(fn, T(prefixes.back()), value_of(r))));
        if (exclusive) prefixes.insert(prefixes.begin(), value);
        encode_parts(prefixes, buffer, parts, tag);
      });
      if (failure) parts.assign(static_cast<std::size_t>(c.size), make_payload({}, failure, text, tag));
    }
    ValueSink<T> sink(operation, 0);
    scatter_payload(operation, c, reinterpret_cast<const std::byte*>(buffer.data()), parts, tag, sink, 0);
    T mine = sink.take();
    if (exclusive && c.rank == 0) return std::nullopt;
    return mine;
  });
}

}  // namespace detail

// Value forms and in-place forms. A collective with a value form returns its result and leaves
// its argument as it is. A non-const std::vector or std::array of numbers (what a torch user
// calls a tensor) takes the in-place form of the same name instead, so `all_reduce(grad, op)`
// reduces `grad` as torch.distributed.all_reduce does, never silently nothing. The in-place forms
// return void: code that used the result of the value form on such a container stops compiling
// instead of changing meaning (write `all_reduce(v, op)`, or `std::as_const(v)` for a copy).
// Overload resolution: a non-const lvalue binds `std::vector<E, A>&` as well as `T` by value, and
// partial ordering prefers the vector (more specialized); a const lvalue or an rvalue cannot bind
// it, so those keep the value form.

/// Every rank gets root's `value` (speechbrain `ddp_broadcast`, ignite `broadcast`). The other
/// ranks' `value` is ignored. Solo: returns `value`.
template <detail::ObjectValue T>
[[nodiscard("broadcast(value) returns root's value and leaves `value` as it is: write v = "
            "mpidist::broadcast(v), or pass a non-const std::vector/std::array to receive in place")]] T
broadcast(const T& value, int root = 0) {
  return detail::broadcast_on(detail::object_comm(detail::object_type<T>(), "broadcast", root), value, root);
}
template <detail::ObjectValue T>
[[nodiscard("broadcast(comm, value) returns root's value and leaves `value` as it is: write v = "
            "mpidist::broadcast(comm, v), or pass a non-const std::vector/std::array to receive in place")]] T
broadcast(const Communicator& comm, const T& value, int root = 0) {
  return detail::broadcast_on(detail::object_comm(detail::object_type<T>(), comm, "broadcast", root), value, root);
}

/// broadcast() of a value the caller gives up: root's value is moved through instead of copied,
/// and the other ranks receive into its memory where they can (a std::vector or std::string of
/// the size root sends is neither reallocated nor zero-filled). For repeated broadcasts into
/// the same buffer: `weights = mpidist::broadcast(std::move(weights), root);`
template <detail::ObjectValue T>
[[nodiscard("broadcast(std::move(v)) returns root's value: write v = mpidist::broadcast(std::move(v))")]] T
broadcast(T&& value, int root = 0) {
  return detail::broadcast_moved_on(detail::object_comm(detail::object_type<T>(), "broadcast", root), std::move(value), root);
}
template <detail::ObjectValue T>
[[nodiscard("broadcast(comm, std::move(v)) returns root's value: write v = mpidist::broadcast(comm, std::move(v))")]] T
broadcast(const Communicator& comm, T&& value, int root = 0) {
  return detail::broadcast_moved_on(detail::object_comm(detail::object_type<T>(), comm, "broadcast", root), std::move(value), root);
}

/// In place: every rank's `values` becomes root's (resized to root's length where needed), as
/// `values = broadcast(std::move(values), root)` leaves it.
template <class E, class A>
requires detail::Number<E>
void broadcast(std::vector<E, A>& values, int root = 0) {
  values = broadcast(std::move(values), root);
}
template <class E, class A>
requires detail::Number<E>
void broadcast(const Communicator& comm, std::vector<E, A>& values, int root = 0) {
  values = broadcast(comm, std::move(values), root);
}
template <class E, std::size_t N>
requires detail::Number<E>
void broadcast(std::array<E, N>& values, int root = 0) {
  values = broadcast(std::as_const(values), root);
}
template <class E, std::size_t N>
requires detail::Number<E>
void broadcast(const Communicator& comm, std::array<E, N>& values, int root = 0) {
  values = broadcast(comm, std::as_const(values), root);
}

/// Every rank's `value`, indexed by rank, on every rank (ignite `all_gather` of numbers and
/// strings). Solo: `{value}`.
template <detail::ObjectValue T>
[[nodiscard("all_gather(value) returns every rank's value and changes nothing; the tensor form "
            "all_gather(in, out) writes into out")]] std::vector<T>
all_gather(const T& value) {
  return detail::all_gather_on(detail::object_comm(detail::object_type<T>(), "all_gather"), value);
}
template <detail::ObjectValue T>
[[nodiscard("all_gather(comm, value) returns every rank's value and changes nothing; the tensor form "
            "all_gather(comm, in, out) writes into out")]] std::vector<T>
all_gather(const Communicator& comm, const T& value) {
  return detail::all_gather_on(detail::object_comm(detail::object_type<T>(), comm, "all_gather"), value);
}

/// Every rank's `value`, indexed by rank, on root; std::nullopt on the other ranks. Solo:
/// `{value}` (this process is the root of its world of one).
template <detail::ObjectValue T>
[[nodiscard("gather(value) returns the values on root and changes nothing")]] std::optional<std::vector<T>>
gather(const T& value, int root = 0) {
  return detail::gather_on(detail::object_comm(detail::object_type<T>(), "gather", root), value, root);
}
template <detail::ObjectValue T>
[[nodiscard("gather(comm, value) returns the values on root and changes nothing")]] std::optional<std::vector<T>>
gather(const Communicator& comm, const T& value, int root = 0) {
  return detail::gather_on(detail::object_comm(detail::object_type<T>(), comm, "gather", root), value, root);
}

/// Rank r gets root's `values[r]`; root's `values` must hold one value per rank (else Error on
/// every rank), the other ranks' `values` is ignored. Solo: `values[rank]`, with the same
/// size check.
template <detail::ObjectValue T>
[[nodiscard("scatter(values) returns this rank's part and changes nothing")]] T scatter(const std::vector<T>& values,
                                                                                        int root = 0) {
  return detail::scatter_on(detail::object_comm(detail::object_type<T>(), "scatter", root), values, root);
}
template <detail::ObjectValue T>
[[nodiscard("scatter(comm, values) returns this rank's part and changes nothing")]] T
scatter(const Communicator& comm, const std::vector<T>& values, int root = 0) {
  return detail::scatter_on(detail::object_comm(detail::object_type<T>(), comm, "scatter", root), values, root);
}

/// axolotl `compute_and_broadcast`: `fn()` runs on root only (inside a MainProcessContext, so
/// mpidist calls in it stay local) and its result reaches every rank. An exception in `fn`
/// becomes Error on every rank ("rank R failed: ..."). Solo: runs `fn` here.
template <detail::Callable F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires detail::ObjectValue<R>
[[nodiscard]] R compute_and_broadcast(F&& fn, int root = 0) {
  return detail::compute_and_broadcast_on(detail::object_comm(detail::object_type<R>(), "compute_and_broadcast", root), fn, root);
}
template <detail::Callable F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires detail::ObjectValue<R>
[[nodiscard]] R compute_and_broadcast(const Communicator& comm, F&& fn, int root = 0) {
  return detail::compute_and_broadcast_on(detail::object_comm(detail::object_type<R>(), comm, "compute_and_broadcast", root), fn, root);
}

/// axolotl `gather_from_all_ranks`: `fn()` runs on every rank; root gets the results indexed by
/// rank, the others std::nullopt. An exception in `fn` on any rank becomes Error on every rank.
/// Solo: `{fn()}`.
template <detail::Callable F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires detail::ObjectValue<R>
[[nodiscard]] std::optional<std::vector<R>> gather_from_all_ranks(F&& fn, int root = 0) {
  return detail::gather_from_all_ranks_on(detail::object_comm(detail::object_type<R>(), "gather_from_all_ranks", root), fn, root);
}
template <detail::Callable F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires detail::ObjectValue<R>
[[nodiscard]] std::optional<std::vector<R>> gather_from_all_ranks(const Communicator& comm, F&& fn, int root = 0) {
  return detail::gather_from_all_ranks_on(detail::object_comm(detail::object_type<R>(), comm, "gather_from_all_ranks", root), fn, root);
}

/// axolotl `gather_scalar_from_all_ranks`: gather_from_all_ranks for an `fn` that returns an
/// arithmetic scalar (a loss, a token count).
template <detail::Callable F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires std::is_arithmetic_v<R>
[[nodiscard]] std::optional<std::vector<R>> gather_scalar_from_all_ranks(F&& fn, int root = 0) {
  return detail::gather_from_all_ranks_on(detail::object_comm(detail::object_type<R>(), "gather_scalar_from_all_ranks", root), fn, root);
}
template <detail::Callable F, class R = std::remove_cvref_t<std::invoke_result_t<F&>>>
requires std::is_arithmetic_v<R>
[[nodiscard]] std::optional<std::vector<R>> gather_scalar_from_all_ranks(const Communicator& comm, F&& fn,
                                                                         int root = 0) {
  return detail::gather_from_all_ranks_on(detail::object_comm(detail::object_type<R>(), comm, "gather_scalar_from_all_ranks", root), fn,
                                          root);
}

/// axolotl `reduce_and_broadcast`: `fn1()` runs on every rank, rank 0 calls `fn2(values)` on
/// all of them (indexed by rank, inside a MainProcessContext) and its result reaches every rank.
/// An exception in `fn1` on any rank, or in `fn2`, becomes Error on every rank. Solo:
/// `fn2({fn1()})`.
template <detail::Callable F1, class F2, class V = std::remove_cvref_t<std::invoke_result_t<F1&>>,
          class R = std::remove_cvref_t<std::invoke_result_t<F2&, std::vector<V>>>>
requires detail::ObjectValue<V> && detail::ObjectValue<R>
[[nodiscard]] R reduce_and_broadcast(F1&& fn1, F2&& fn2) {
  return detail::reduce_and_broadcast_on(detail::object_comm(detail::object_type<V>(), "reduce_and_broadcast", 0), fn1, fn2);
}
template <detail::Callable F1, class F2, class V = std::remove_cvref_t<std::invoke_result_t<F1&>>,
          class R = std::remove_cvref_t<std::invoke_result_t<F2&, std::vector<V>>>>
requires detail::ObjectValue<V> && detail::ObjectValue<R>
[[nodiscard]] R reduce_and_broadcast(const Communicator& comm, F1&& fn1, F2&& fn2) {
  return detail::reduce_and_broadcast_on(detail::object_comm(detail::object_type<V>(), comm, "reduce_and_broadcast", 0), fn1, fn2);
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
[[nodiscard("all_reduce(value, op) returns the reduction and leaves a const or temporary `value` (or a "
            "number) as it is: write x = mpidist::all_reduce(x, op); a non-const std::vector/std::array, "
            "or a std::span, is reduced in place by all_reduce(v, op)")]] T
all_reduce(T value, ReduceOp op = ReduceOp::Sum) {
  detail::reduce_value_on("all_reduce", detail::object_comm(detail::object_type<T>(), "all_reduce"), value, op, -1);
  return value;
}
template <detail::Reducible T>
[[nodiscard("all_reduce(comm, value, op) returns the reduction and leaves a const or temporary `value` (or "
            "a number) as it is: write x = mpidist::all_reduce(comm, x, op); a non-const "
            "std::vector/std::array, or a std::span, is reduced in place by all_reduce(comm, v, op)")]] T
all_reduce(const Communicator& comm, T value, ReduceOp op = ReduceOp::Sum) {
  detail::reduce_value_on("all_reduce", detail::object_comm(detail::object_type<T>(), comm, "all_reduce"), value, op, -1);
  return value;
}

/// In place (torch.distributed.all_reduce): every rank's `values` becomes the element-wise
/// reduction, with the value form's checks and semantics (lengths must match, else Error on every
/// rank; integers exact; And/Or logical). `std::span(values)` is the tensor form: no length check,
/// the node's shared memory, float16/bfloat16.
template <class E, class A>
requires detail::Number<E>
void all_reduce(std::vector<E, A>& values, ReduceOp op = ReduceOp::Sum) {
  detail::reduce_in_place_on("all_reduce", detail::object_comm(detail::object_type<std::vector<E, A>>(), "all_reduce"),
                             values, op, -1);
}
template <class E, class A>
requires detail::Number<E>
void all_reduce(const Communicator& comm, std::vector<E, A>& values, ReduceOp op = ReduceOp::Sum) {
  detail::reduce_in_place_on(
      "all_reduce", detail::object_comm(detail::object_type<std::vector<E, A>>(), comm, "all_reduce"), values, op, -1);
}
template <class E, std::size_t N>
requires detail::Number<E>
void all_reduce(std::array<E, N>& values, ReduceOp op = ReduceOp::Sum) {
  detail::reduce_in_place_on("all_reduce", detail::object_comm(detail::object_type<std::array<E, N>>(), "all_reduce"),
                             values, op, -1);
}
template <class E, std::size_t N>
requires detail::Number<E>
void all_reduce(const Communicator& comm, std::array<E, N>& values, ReduceOp op = ReduceOp::Sum) {
  detail::reduce_in_place_on(
      "all_reduce", detail::object_comm(detail::object_type<std::array<E, N>>(), comm, "all_reduce"), values, op, -1);
}

/// A ReduceOp reduces arithmetic values, std::vector / std::array of them and metrics maps only:
/// for any other type this is a compile error that says to pass a function instead
/// (`mpidist::all_reduce(value, std::plus<>{})`, a lambda). A static_assert, not a deleted
/// overload, so that the message reaches the user.
template <detail::NotReducibleObject T>
T all_reduce(const T& value, ReduceOp = ReduceOp::Sum) {
  detail::refuse_reduce_op<T>();
  return value;
}
template <detail::NotReducibleObject T>
T all_reduce(const Communicator&, const T& value, ReduceOp = ReduceOp::Sum) {
  detail::refuse_reduce_op<T>();
  return value;
}

/// In place, as a tensor (all_reduce(std::span(v), op)): a non-const container of elements that is
/// not a std::vector or std::array of numbers (`std::valarray<double> field`,
/// `std::vector<float16> grad`). Chosen over the refusal above, which a const one still gets.
template <detail::TensorOnlyContainer C>
void all_reduce(C& values, ReduceOp op = ReduceOp::Sum) {
  all_reduce(BufferView(values), op);
}
template <detail::TensorOnlyContainer C>
void all_reduce(const Communicator& comm, C& values, ReduceOp op = ReduceOp::Sum) {
  all_reduce(comm, BufferView(values), op);
}

/// Boost.MPI `all_reduce(comm, value, op)`, mpi4py `allreduce(obj, op)`: every rank gets
/// `(((v0 fn v1) fn v2) ... fn vN-1)`, the values of all ranks combined in rank order, for any
/// type the object collectives carry and any associative `fn(T, T) -> T` (commutative or not:
/// string concatenation gives the same string everywhere). `fn` runs on the group's rank 0 only
/// (inside a MainProcessContext); an exception in it becomes Error on every rank ("rank 0
/// failed: ..."). Solo: `value`, without calling `fn`. For a std::vector or std::array, an `fn`
/// of two elements (`fn(E, E)`, generic lambdas included) combines them index by index instead.
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] T all_reduce(const T& value, F&& fn) {
  auto&& combine = detail::fold_function<T>(fn);
  return *detail::fold_on("all_reduce", detail::object_comm(detail::object_type<T>(), "all_reduce"), value, combine, -1);
}
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] T all_reduce(const Communicator& comm, const T& value, F&& fn) {
  auto&& combine = detail::fold_function<T>(fn);
  return *detail::fold_on("all_reduce", detail::object_comm(detail::object_type<T>(), comm, "all_reduce"), value,
                          combine, -1);
}

/// torch `reduce`, Boost.MPI `reduce`, for objects: the reduction of every rank's `value` under
/// `op` on root (same semantics as all_reduce: integers exact, Avg, logical And/Or, bool,
/// element-wise vectors and arrays with the length check, metrics key-wise), std::nullopt on the
/// other ranks. Solo: `value` (with And/Or mapped to 0/1).
template <detail::Reducible T>
[[nodiscard("reduce(value, op, root) returns the reduction on root and leaves a const or temporary `value` "
            "(or a number) as it is; a non-const std::vector/std::array is reduced in place on root by "
            "reduce(v, op, root)")]] std::optional<T>
reduce(T value, ReduceOp op, int root = 0) {
  const auto c = detail::object_comm(detail::object_type<T>(), "reduce", root);
  detail::reduce_value_on("reduce", c, value, op, root);
  if (!c.solo() && c.rank != root) return std::nullopt;
  return value;
}
template <detail::Reducible T>
[[nodiscard("reduce(comm, value, op, root) returns the reduction on root and leaves a const or temporary "
            "`value` (or a number) as it is; a non-const std::vector/std::array is reduced in place on root "
            "by reduce(comm, v, op, root)")]] std::optional<T>
reduce(const Communicator& comm, T value, ReduceOp op, int root = 0) {
  const auto c = detail::object_comm(detail::object_type<T>(), comm, "reduce", root);
  detail::reduce_value_on("reduce", c, value, op, root);
  if (!c.solo() && c.rank != root) return std::nullopt;
  return value;
}

/// In place (torch.distributed.reduce): root's `values` becomes the reduction; the other ranks'
/// `values` stay as they are. The value form's checks and semantics.
template <class E, class A>
requires detail::Number<E>
void reduce(std::vector<E, A>& values, ReduceOp op, int root = 0) {
  detail::reduce_in_place_on("reduce", detail::object_comm(detail::object_type<std::vector<E, A>>(), "reduce", root),
                             values, op, root);
}
template <class E, class A>
requires detail::Number<E>
void reduce(const Communicator& comm, std::vector<E, A>& values, ReduceOp op, int root = 0) {
  detail::reduce_in_place_on(
      "reduce", detail::object_comm(detail::object_type<std::vector<E, A>>(), comm, "reduce", root), values, op, root);
}
template <class E, std::size_t N>
requires detail::Number<E>
void reduce(std::array<E, N>& values, ReduceOp op, int root = 0) {
  detail::reduce_in_place_on("reduce", detail::object_comm(detail::object_type<std::array<E, N>>(), "reduce", root),
                             values, op, root);
}
template <class E, std::size_t N>
requires detail::Number<E>
void reduce(const Communicator& comm, std::array<E, N>& values, ReduceOp op, int root = 0) {
  detail::reduce_in_place_on(
      "reduce", detail::object_comm(detail::object_type<std::array<E, N>>(), comm, "reduce", root), values, op, root);
}

/// A ReduceOp reduces arithmetic values, std::vector / std::array of them and metrics maps only:
/// for any other type a compile error that says to pass a function instead.
template <detail::NotReducibleObject T>
std::optional<T> reduce(const T& value, ReduceOp, int = 0) {
  detail::refuse_reduce_op<T>();
  return value;
}
template <detail::NotReducibleObject T>
std::optional<T> reduce(const Communicator&, const T& value, ReduceOp, int = 0) {
  detail::refuse_reduce_op<T>();
  return value;
}

/// In place on root, as a tensor (reduce(std::span(v), op, root)), for the containers all_reduce
/// above takes as tensors.
template <detail::TensorOnlyContainer C>
void reduce(C& values, ReduceOp op, int root = 0) {
  reduce(BufferView(values), op, root);
}
template <detail::TensorOnlyContainer C>
void reduce(const Communicator& comm, C& values, ReduceOp op, int root = 0) {
  reduce(comm, BufferView(values), op, root);
}

/// reduce with the caller's associative `fn(T, T) -> T`, in rank order as all_reduce(value, fn):
/// the reduction on root, std::nullopt elsewhere. `fn` runs on root only (inside a
/// MainProcessContext); an exception in it becomes Error on every rank. Solo: `value`.
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] std::optional<T> reduce(const T& value, F&& fn, int root = 0) {
  auto&& combine = detail::fold_function<T>(fn);
  return detail::fold_on("reduce", detail::object_comm(detail::object_type<T>(), "reduce", root), value, combine, root);
}
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] std::optional<T> reduce(const Communicator& comm, const T& value, F&& fn, int root = 0) {
  auto&& combine = detail::fold_function<T>(fn);
  return detail::fold_on("reduce", detail::object_comm(detail::object_type<T>(), comm, "reduce", root), value, combine,
                         root);
}

/// Prefix reductions (MPI_Scan and MPI_Exscan; mpi4py's `scan`/`exscan`, Boost.MPI's `scan`): scan
/// gives rank r the reduction under `op` of the values of ranks 0..r, exscan of ranks 0..r-1, rank 0
/// getting the op's identity (0 for a sum, 1 for a product, the type's largest (or +inf) for Min, its
/// lowest (or -inf) for Max, all bits for BitAnd). Where a rank's part starts when the ranks' parts
/// lie end to end: `long long first = mpidist::exscan(my_count);`. Numbers, and element by element
/// a std::vector or std::array of them or a std::span of numbers (lengths must match, else Error on
/// every rank). Integers exact; bool and And/Or as in all_reduce; every ReduceOp but Avg, which is
/// an Error on every rank. Solo: scan is `value` (And/Or mapped to 0/1), exscan the identity. A
/// non-const std::vector or std::array, or a span, is scanned in place.
template <detail::Scannable T>
[[nodiscard("scan(value, op) returns the prefix and leaves a const or temporary `value` (or a number) as it "
            "is: write x = mpidist::scan(x, op); a non-const std::vector/std::array is scanned in place")]] T
scan(const T& value, ReduceOp op = ReduceOp::Sum) {
  T result = value;
  detail::scan_value_on("scan", detail::object_comm(detail::object_type<T>(), "scan"), result, op, false);
  return result;
}
template <detail::Scannable T>
[[nodiscard("scan(comm, value, op) returns the prefix and leaves a const or temporary `value` (or a number) "
            "as it is: write x = mpidist::scan(comm, x, op)")]] T
scan(const Communicator& comm, const T& value, ReduceOp op = ReduceOp::Sum) {
  T result = value;
  detail::scan_value_on("scan", detail::object_comm(detail::object_type<T>(), comm, "scan"), result, op, false);
  return result;
}
template <detail::Scannable T>
[[nodiscard("exscan(value, op) returns the prefix before this rank and leaves a const or temporary `value` "
            "(or a number) as it is: write first = mpidist::exscan(count); a non-const "
            "std::vector/std::array is scanned in place")]] T
exscan(const T& value, ReduceOp op = ReduceOp::Sum) {
  T result = value;
  detail::scan_value_on("exscan", detail::object_comm(detail::object_type<T>(), "exscan"), result, op, true);
  return result;
}
template <detail::Scannable T>
[[nodiscard("exscan(comm, value, op) returns the prefix before this rank and leaves a const or temporary "
            "`value` (or a number) as it is: write first = mpidist::exscan(comm, count)")]] T
exscan(const Communicator& comm, const T& value, ReduceOp op = ReduceOp::Sum) {
  T result = value;
  detail::scan_value_on("exscan", detail::object_comm(detail::object_type<T>(), comm, "exscan"), result, op, true);
  return result;
}
/// In place: a non-const std::vector or std::array of numbers (preferred over the value forms,
/// which take it by const reference).
template <class C>
requires detail::reducible_container<C>::value
void scan(C& values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("scan", detail::object_comm(detail::object_type<C>(), "scan"), values, op, false);
}
template <class C>
requires detail::reducible_container<C>::value
void scan(const Communicator& comm, C& values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("scan", detail::object_comm(detail::object_type<C>(), comm, "scan"), values, op, false);
}
template <class C>
requires detail::reducible_container<C>::value
void exscan(C& values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("exscan", detail::object_comm(detail::object_type<C>(), "exscan"), values, op, true);
}
template <class C>
requires detail::reducible_container<C>::value
void exscan(const Communicator& comm, C& values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("exscan", detail::object_comm(detail::object_type<C>(), comm, "exscan"), values, op, true);
}
/// scan with the caller's associative `fn(T, T) -> T`, in rank order as all_reduce(value, fn): rank
/// r gets (((v0 fn v1) fn v2) ... fn vr), for any type the object collectives carry (concatenating
/// strings gives rank r the strings of ranks 0..r). `fn` runs on the group's rank 0 only (p - 1
/// calls, inside a MainProcessContext); an exception in it is an Error on every rank. For a
/// std::vector or std::array, an `fn` of two elements combines them index by index (a non-const
/// one is then scanned in place: elementwise_reduce.hpp). Solo: `value`, without calling `fn`.
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] T scan(const T& value, F&& fn) {
  auto&& combine = detail::fold_function<T>(fn);
  return *detail::prefix_fold_on("scan", detail::object_comm(detail::object_type<T>(), "scan"), value, combine, false);
}
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] T scan(const Communicator& comm, const T& value, F&& fn) {
  auto&& combine = detail::fold_function<T>(fn);
  return *detail::prefix_fold_on("scan", detail::object_comm(detail::object_type<T>(), comm, "scan"), value, combine,
                                 false);
}
/// exscan with a function: rank r > 0 gets (v0 fn v1 ... fn v(r-1)), rank 0 std::nullopt, since a
/// function has no identity (mpi4py's `exscan` gives None there, MPI leaves it undefined). Solo:
/// std::nullopt.
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] std::optional<T> exscan(const T& value, F&& fn) {
  auto&& combine = detail::fold_function<T>(fn);
  return detail::prefix_fold_on("exscan", detail::object_comm(detail::object_type<T>(), "exscan"), value, combine, true);
}
template <detail::ObjectValue T, class F>
requires detail::ValueFunction<F, T>
[[nodiscard]] std::optional<T> exscan(const Communicator& comm, const T& value, F&& fn) {
  auto&& combine = detail::fold_function<T>(fn);
  return detail::prefix_fold_on("exscan", detail::object_comm(detail::object_type<T>(), comm, "exscan"), value,
                                combine, true);
}
/// In place: a span of numbers (`std::span<long long>`), element by element, lengths checked.
template <detail::Number E, std::size_t Extent>
requires(!std::is_const_v<E>)
void scan(std::span<E, Extent> values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("scan", detail::object_comm(detail::object_type<std::vector<E>>(), "scan"),
                        values, op, false);
}
template <detail::Number E, std::size_t Extent>
requires(!std::is_const_v<E>)
void scan(const Communicator& comm, std::span<E, Extent> values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("scan", detail::object_comm(detail::object_type<std::vector<E>>(), comm, "scan"),
                        values, op, false);
}
template <detail::Number E, std::size_t Extent>
requires(!std::is_const_v<E>)
void exscan(std::span<E, Extent> values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("exscan", detail::object_comm(detail::object_type<std::vector<E>>(), "exscan"),
                        values, op, true);
}
template <detail::Number E, std::size_t Extent>
requires(!std::is_const_v<E>)
void exscan(const Communicator& comm, std::span<E, Extent> values, ReduceOp op = ReduceOp::Sum) {
  detail::scan_value_on("exscan", detail::object_comm(detail::object_type<std::vector<E>>(), comm, "exscan"),
                        values, op, true);
}

// Point-to-point objects (Boost.MPI's send and recv): any value the object calls carry, between
// two ranks of the group. The rules of the tensor forms (p2p.hpp) apply: a peer out of range, a
// bad tag, a blocking send to this rank, any message inside a MainProcessContext are a local Error
// at once; a receive never matched ends at the communicator's timeout, naming the peer and tag.
// A value goes as two messages on `tag` (a frame with its type and size, then its bytes): the
// receiver checks the frame before allocating anything, so another type is an Error naming both
// types ("rank 0 sent std::string where this rank expects int"), and a payload that is not a valid
// T (a wrong size, a corrupt archive) is an Error; the rest of the message is then discarded.
namespace detail {
/// Sends an encoded value (`type`: its type's fingerprint) to `dest`. lib/objects/p2p.cpp.
void send_object_payload(const Communicator* comm, const void* data, std::size_t size, std::uint64_t type, int dest,
                         int tag);
/// Receives a value of fingerprint `type` into sink.reserve(size), after checking its frame.
Status recv_object_payload(const Communicator* comm, std::uint64_t type, PayloadSink& sink, int src, int tag);
/// Both at once: the send started first, then the receive, then the send finished.
Status sendrecv_object_payload(const Communicator* comm, const void* data, std::size_t size, std::uint64_t type,
                               int dest, PayloadSink& sink, int src, int tag);

template <ObjectValue T>
void send_object(const Communicator* comm, const T& value, int dest, int tag) {
  const Encoded encoded = encode(value);
  send_object_payload(comm, encoded.data(), encoded.size(), type_tag<T>(), dest, tag);
}
template <ObjectValue T>
Status recv_object(const Communicator* comm, int src, int tag, T& value) {
  ValueSink<T> sink("recv", src);
  const Status status = recv_object_payload(comm, type_tag<T>(), sink, src, tag);
  if (status.source != proc_null) value = sink.take();
  return status;
}
template <ObjectValue T>
T sendrecv_object(const Communicator* comm, const T& value, int dest, int src, int tag) {
  const Encoded encoded = encode(value);
  ValueSink<T> sink("sendrecv", src);
  const Status status = sendrecv_object_payload(comm, encoded.data(), encoded.size(), type_tag<T>(), dest, sink, src, tag);
  return status.source == proc_null ? T{} : sink.take();
}
}  // namespace detail

/// Sends `value` to rank `dest` of the group; returns when it may be changed.
template <detail::ObjectValue T>
void send(const Communicator& comm, const T& value, int dest, int tag = 0) {
  detail::send_object(&comm, value, dest, tag);
}
template <detail::ObjectValue T>
void send(const T& value, int dest, int tag = 0) {
  detail::send_object(nullptr, value, dest, tag);
}
/// Receives a value from `src` (or any_source) with `tag` (or any_tag) into `value`.
template <detail::ObjectValue T>
Status recv(const Communicator& comm, int src, int tag, T& value) {
  return detail::recv_object(&comm, src, tag, value);
}
template <detail::ObjectValue T>
Status recv(int src, int tag, T& value) {
  return detail::recv_object(nullptr, src, tag, value);
}
/// Receives and returns a T from `src` (`recv<std::string>(comm, 0)`).
template <detail::ObjectValue T>
[[nodiscard]] T recv(const Communicator& comm, int src, int tag = 0) {
  T value{};
  detail::recv_object(&comm, src, tag, value);
  return value;
}
template <detail::ObjectValue T>
[[nodiscard]] T recv(int src, int tag = 0) {
  T value{};
  detail::recv_object(nullptr, src, tag, value);
  return value;
}

/// MPI_Sendrecv, mpi4py's `sendrecv(obj, dest, source)`, Boost.MPI's `sendrecv`: sends `value` to
/// `dest` and returns the T received from `src` (or any_source), both on `tag`, without the
/// deadlock a ring of blocking sends would risk (the send is started before the receive); `dest`
/// and `src` may be this rank. The halo exchange: `right_edge = sendrecv(left_edge, left, right)`.
/// With `src` proc_null (an edge of a halo that does not wrap around) it returns a T{}.
template <detail::ObjectValue T>
[[nodiscard]] T sendrecv(const Communicator& comm, const T& value, int dest, int src, int tag = 0) {
  return detail::sendrecv_object(&comm, value, dest, src, tag);
}
template <detail::ObjectValue T>
[[nodiscard]] T sendrecv(const T& value, int dest, int src, int tag = 0) {
  return detail::sendrecv_object(nullptr, value, dest, src, tag);
}

namespace detail {
/// all_to_all's transport (lib/objects/p2p.cpp): parts[j] goes to rank j; returns the part every
/// rank sent this one (this rank's own slot empty). Every rank takes part in the whole exchange,
/// then throws: "rank R failed: ..." for a sender whose parts are a failure, or, for a part of
/// another type than `tag`, the Error naming both types (every rank sees one then: in step).
GatheredPayloads all_to_all_payload(const char* operation, const ObjectComm& c, const std::vector<Payload>& parts,
                                    std::uint64_t tag);

template <ObjectValue T>
std::vector<T> all_to_all_on(const ObjectComm& c, const std::vector<T>& values) {
  const auto n = static_cast<std::size_t>(c.size);
  std::exception_ptr failure;
  if (values.size() != n)
    failure = std::make_exception_ptr(Error("all_to_all", "values has " + std::to_string(values.size()) +
                                                              " entries but the group has " + std::to_string(n) + " ranks"));
  if (c.solo()) {
    if (failure) std::rethrow_exception(failure);
    return values;
  }
  std::vector<char> buffer;
  std::vector<Payload> parts;
  std::string text;
  if (!failure) failure = capture([&] { encode_parts(values, buffer, parts, type_tag<T>()); });
  if (failure) {
    text = describe_exception(failure);
    parts.assign(n, Payload{text.data(), text.size(), type_tag<T>(), true});
  }
  const GatheredPayloads got = all_to_all_payload("all_to_all", c, parts, type_tag<T>());
  std::vector<T> result;
  result.reserve(n);
  for (int r = 0; r < c.size; ++r)
    result.push_back(r == c.rank ? values[static_cast<std::size_t>(r)] : decode<T>("all_to_all", r, got.data(r), got.size(r)));
  return result;
}
}  // namespace detail

/// Boost.MPI's all_to_all, mpi4py's alltoall: `values[j]` goes to rank j; the result's [i] came
/// from rank i. *Collective*; `values.size()` must be the group's size (else Error on every rank,
/// naming the rank). Solo: `values` itself.
template <detail::ObjectValue T>
[[nodiscard]] std::vector<T> all_to_all(const std::vector<T>& values) {
  return detail::all_to_all_on(detail::object_comm(detail::object_type<T>(), "all_to_all"), values);
}
template <detail::ObjectValue T>
[[nodiscard]] std::vector<T> all_to_all(const Communicator& comm, const std::vector<T>& values) {
  return detail::all_to_all_on(detail::object_comm(detail::object_type<T>(), comm, "all_to_all"), values);
}

}  // namespace mpidist
