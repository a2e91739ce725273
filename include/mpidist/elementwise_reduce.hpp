// all_reduce, reduce and scan of a container with a function of its elements: `fn(E, E) -> E`
// combines the ranks' elements one index at a time (what MPI_Op_create's user function does), so
// `all_reduce(v, [](float a, float b) { return std::max(a, b); })` reduces a std::vector<float> in
// place as `all_reduce(v, ReduceOp::Max)` would. A function that takes two elements is one of
// elements (generic lambdas included: detail/reduce_functions.hpp); one of two whole containers
// only takes the object form (objects.hpp) instead.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mpidist/communicator.hpp"
#include "mpidist/error.hpp"
#include "mpidist/objects.hpp"
#include "mpidist/tensor.hpp"

namespace mpidist {
namespace detail {

/// `values` becomes the reduction of every rank's under fn, index by index: on every rank
/// (root < 0, all_reduce) or on root only (reduce; the other ranks' values stay as they are).
template <class C, class F>
void reduce_elements_on(const char* operation, const ObjectComm& c, C& values, F& fn, int root) {
  auto combine = index_by_index<C>(fn);
  if (auto reduced = fold_on(operation, c, values, combine, root)) values = std::move(*reduced);
}

/// `body(elements)` on a vector of a span's elements, written back after: a function (what `verb`
/// says it does) takes host memory only.
template <class T, std::size_t Extent, class Body>
void through_elements(const char* operation, const char* verb, std::span<T, Extent> values, Body body) {
  if (BufferView(values).memory() == MemoryKind::Device)
    throw Error(operation, std::string("a function ") + verb + " host memory only; pass a ReduceOp for device memory");
  std::vector<T> elements(values.begin(), values.end());
  body(elements);
  std::copy(elements.begin(), elements.end(), values.begin());
}

/// A span's elements, reduced in place.
template <class T, std::size_t Extent, class F>
void reduce_span_on(const char* operation, const ObjectComm& c, std::span<T, Extent> values, F& fn, int root) {
  through_elements(operation, "reduces", values,
                   [&](auto& elements) { reduce_elements_on(operation, c, elements, fn, root); });
}

/// `values` becomes the prefix of the ranks' up to this one's under fn, index by index.
template <class C, class F>
void scan_elements_on(const ObjectComm& c, C& values, F& fn) {
  auto combine = index_by_index<C>(fn);
  values = *prefix_fold_on("scan", c, values, combine, false);
}

/// A span's elements, scanned in place.
template <class T, std::size_t Extent, class F>
void scan_span_on(const ObjectComm& c, std::span<T, Extent> values, F& fn) {
  through_elements("scan", "scans", values, [&](auto& elements) { scan_elements_on(c, elements, fn); });
}

}  // namespace detail

/// In place: `values[i]` becomes `fn` folded over every rank's `values[i]` in rank order
/// (((v0 fn v1) fn v2) ...), the same on every rank. The ranks' lengths must match (else an Error
/// on every rank naming the rank that differs). `fn` runs on the group's rank 0 (inside a
/// MainProcessContext); an exception in it is an Error on every rank, as for the object form.
template <class E, class A, class F>
requires detail::ElementFunction<F, std::vector<E, A>>
void all_reduce(std::vector<E, A>& values, F&& fn) {
  const auto c = detail::object_comm(detail::object_type<std::vector<E, A>>(), "all_reduce");
  detail::reduce_elements_on("all_reduce", c, values, fn, -1);
}
template <class E, class A, class F>
requires detail::ElementFunction<F, std::vector<E, A>>
void all_reduce(const Communicator& comm, std::vector<E, A>& values, F&& fn) {
  const auto c = detail::object_comm(detail::object_type<std::vector<E, A>>(), comm, "all_reduce");
  detail::reduce_elements_on("all_reduce", c, values, fn, -1);
}
template <class E, std::size_t N, class F>
requires detail::ElementFunction<F, std::array<E, N>>
void all_reduce(std::array<E, N>& values, F&& fn) {
  const auto c = detail::object_comm(detail::object_type<std::array<E, N>>(), "all_reduce");
  detail::reduce_elements_on("all_reduce", c, values, fn, -1);
}
template <class E, std::size_t N, class F>
requires detail::ElementFunction<F, std::array<E, N>>
void all_reduce(const Communicator& comm, std::array<E, N>& values, F&& fn) {
  const auto c = detail::object_comm(detail::object_type<std::array<E, N>>(), comm, "all_reduce");
  detail::reduce_elements_on("all_reduce", c, values, fn, -1);
}
/// A span of host memory (std::span<long long>), in place.
template <Element T, std::size_t Extent, class F>
requires(!std::is_const_v<T> && detail::ReduceFunction<F, T>)
void all_reduce(std::span<T, Extent> values, F&& fn) {
  const auto c = detail::object_comm(detail::object_type<std::vector<T>>(), "all_reduce");
  detail::reduce_span_on("all_reduce", c, values, fn, -1);
}
template <Element T, std::size_t Extent, class F>
requires(!std::is_const_v<T> && detail::ReduceFunction<F, T>)
void all_reduce(const Communicator& comm, std::span<T, Extent> values, F&& fn) {
  const auto c = detail::object_comm(detail::object_type<std::vector<T>>(), comm, "all_reduce");
  detail::reduce_span_on("all_reduce", c, values, fn, -1);
}

/// reduce in place with a function of elements: root's `values` becomes the reduction, as
/// all_reduce(values, fn) computes it (fn runs on root); the other ranks' `values` stay as they are.
template <class E, class A, class F>
requires detail::ElementFunction<F, std::vector<E, A>>
void reduce(std::vector<E, A>& values, F&& fn, int root = 0) {
  const auto c = detail::object_comm(detail::object_type<std::vector<E, A>>(), "reduce", root);
  detail::reduce_elements_on("reduce", c, values, fn, root);
}
template <class E, class A, class F>
requires detail::ElementFunction<F, std::vector<E, A>>
void reduce(const Communicator& comm, std::vector<E, A>& values, F&& fn, int root = 0) {
  const auto c = detail::object_comm(detail::object_type<std::vector<E, A>>(), comm, "reduce", root);
  detail::reduce_elements_on("reduce", c, values, fn, root);
}
template <Element T, std::size_t Extent, class F>
requires(!std::is_const_v<T> && detail::ReduceFunction<F, T>)
void reduce(std::span<T, Extent> values, F&& fn, int root = 0) {
  const auto c = detail::object_comm(detail::object_type<std::vector<T>>(), "reduce", root);
  detail::reduce_span_on("reduce", c, values, fn, root);
}
template <Element T, std::size_t Extent, class F>
requires(!std::is_const_v<T> && detail::ReduceFunction<F, T>)
void reduce(const Communicator& comm, std::span<T, Extent> values, F&& fn, int root = 0) {
  const auto c = detail::object_comm(detail::object_type<std::vector<T>>(), comm, "reduce", root);
  detail::reduce_span_on("reduce", c, values, fn, root);
}

/// scan in place with a function of elements: `values[i]` becomes fn folded over `values[i]` of
/// ranks 0..this one, in rank order (a std::vector, a std::array, a span of host memory). As the
/// object form: `fn` runs on the group's rank 0, lengths must match, an exception in it is an
/// Error on every rank. exscan has no in-place form with a function: rank 0 would have nothing to
/// hold (its value form returns std::nullopt there).
template <class E, class A, class F>
requires detail::ElementFunction<F, std::vector<E, A>>
void scan(std::vector<E, A>& values, F&& fn) {
  detail::scan_elements_on(detail::object_comm(detail::object_type<std::vector<E, A>>(), "scan"), values, fn);
}
template <class E, class A, class F>
requires detail::ElementFunction<F, std::vector<E, A>>
void scan(const Communicator& comm, std::vector<E, A>& values, F&& fn) {
  detail::scan_elements_on(detail::object_comm(detail::object_type<std::vector<E, A>>(), comm, "scan"), values, fn);
}
template <class E, std::size_t N, class F>
requires detail::ElementFunction<F, std::array<E, N>>
void scan(std::array<E, N>& values, F&& fn) {
  detail::scan_elements_on(detail::object_comm(detail::object_type<std::array<E, N>>(), "scan"), values, fn);
}
template <class E, std::size_t N, class F>
requires detail::ElementFunction<F, std::array<E, N>>
void scan(const Communicator& comm, std::array<E, N>& values, F&& fn) {
  detail::scan_elements_on(detail::object_comm(detail::object_type<std::array<E, N>>(), comm, "scan"), values, fn);
}
template <Element T, std::size_t Extent, class F>
requires(!std::is_const_v<T> && detail::ReduceFunction<F, T>)
void scan(std::span<T, Extent> values, F&& fn) {
  detail::scan_span_on(detail::object_comm(detail::object_type<std::vector<T>>(), "scan"), values, fn);
}
template <Element T, std::size_t Extent, class F>
requires(!std::is_const_v<T> && detail::ReduceFunction<F, T>)
void scan(const Communicator& comm, std::span<T, Extent> values, F&& fn) {
  detail::scan_span_on(detail::object_comm(detail::object_type<std::vector<T>>(), comm, "scan"), values, fn);
}

}  // namespace mpidist
