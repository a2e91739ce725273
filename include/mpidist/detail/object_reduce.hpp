// Element-wise and key-wise reductions behind mpidist::all_reduce and mpidist::reduce for objects.
// Internal; implemented in lib/objects/reduce.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "mpidist/detail/object_transport.hpp"
#include "mpidist/reduce_op.hpp"

namespace mpidist::detail {

/// How an arithmetic element reduces: the MPI datatype follows from kind and size.
enum class ArithKind { Signed, Unsigned, Floating, Bool };

template <class T>
constexpr ArithKind arith_kind_v = std::is_same_v<T, bool>       ? ArithKind::Bool
                                   : std::is_floating_point_v<T> ? ArithKind::Floating
                                   : std::is_signed_v<T>         ? ArithKind::Signed
                                                                 : ArithKind::Unsigned;

/// In place over the ranks of `c`: `count` elements of (kind, element_size) at `data`. The result
/// lands on every rank (root < 0) or on `root` only (the others' `data` is then unspecified). With
/// `check_length`, the counts are first compared across ranks (Error on every rank if they
/// differ). Local when `c` is solo.
void reduce_elements(const char* operation, const ObjectComm& c, void* data, std::size_t count, ArithKind kind,
                     std::size_t element_size, ReduceOp op, bool check_length, int root);

/// Key-wise in place, on every rank (root < 0) or on root; Error on every rank, naming the keys
/// each rank lacks, when keys differ.
void reduce_metrics(const char* operation, const ObjectComm& c, std::map<std::string, double>& metrics, ReduceOp op,
                    int root);

template <class T>
struct is_std_array : std::false_type {};
template <class E, std::size_t N>
struct is_std_array<std::array<E, N>> : std::true_type {};

template <class T>
struct reducible_container : std::false_type {};
template <class E, class A>
struct reducible_container<std::vector<E, A>> : std::bool_constant<std::is_arithmetic_v<E>> {};
template <class E, std::size_t N>
struct reducible_container<std::array<E, N>> : std::bool_constant<std::is_arithmetic_v<E>> {};

/// What all_reduce accepts: an arithmetic scalar (bool included), a std::vector or std::array of
/// them, or a metrics map.
template <class T>
concept Reducible =
    std::is_arithmetic_v<T> || reducible_container<T>::value || std::is_same_v<T, std::map<std::string, double>>;

}  // namespace mpidist::detail
