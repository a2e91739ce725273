// Which functions the reductions with a function take, and how: a function of two elements of a
// std::vector or std::array reduces it index by index; any other, of two whole values, folds the
// values. Internal, behind objects.hpp and elementwise_reduce.hpp.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mpidist/communicator.hpp"

namespace mpidist::detail {

/// A reduction function for T, as Boost.MPI's `all_reduce(comm, value, op)` and mpi4py's
/// `allreduce(obj, op)` take: `fn(a, b)` combines two values into one (`std::plus<>{}`, a lambda).
template <class F, class T>
concept ReduceFunction = !std::same_as<std::remove_cvref_t<F>, Communicator> && std::invocable<F&, T, T> &&
                         std::convertible_to<std::invoke_result_t<F&, T, T>, T>;

template <class F, class T>
struct element_function : std::false_type {};
template <class F, class E, class A>
struct element_function<F, std::vector<E, A>> : std::bool_constant<ReduceFunction<F, E>> {};
template <class F, class E, std::size_t N>
struct element_function<F, std::array<E, N>> : std::bool_constant<ReduceFunction<F, E>> {};

/// fn of two elements of the std::vector or std::array T (MPI_Op_create's user function). Tried
/// first: when it holds, fn is never tried on two whole T, because a generic lambda
/// (`[](auto a, auto b) { return a + b; }`) does not compile for two vectors, and one that would
/// (`[](auto a, auto b) { return std::max(a, b); }`) means the elements, not the larger vector.
template <class F, class T>
concept ElementFunction = element_function<F, T>::value;

/// What the value forms take: a function of elements, or else one of two whole values.
template <class F, class T>
concept ValueFunction = ElementFunction<F, T> || ReduceFunction<F, T>;

/// fn over two whole containers, index by index. The k-th call folds in rank k's container (the
/// fold runs in rank order), so a length that differs names that rank.
template <class C, class F>
auto index_by_index(F& fn) {
  return [&fn, rank = 0](C acc, const C& next) mutable {
    ++rank;
    if (next.size() != acc.size())
      throw std::invalid_argument("rank " + std::to_string(rank) + " holds " + std::to_string(next.size()) +
                                  " elements where rank 0 holds " + std::to_string(acc.size()) +
                                  ": a function of elements needs the same length on every rank");
    for (std::size_t i = 0; i < acc.size(); ++i)
      acc[i] = static_cast<typename C::value_type>(std::invoke(fn, acc[i], next[i]));
    return acc;
  };
}

/// What a fold of whole T applies: fn index by index for a function of elements, else fn itself.
template <class T, class F>
decltype(auto) fold_function(F& fn) {
  if constexpr (ElementFunction<F, T>) return index_by_index<T>(fn);
  else return (fn);
}

}  // namespace mpidist::detail
