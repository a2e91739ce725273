// A non-const std::vector / std::array of numbers takes the in-place forms: these lines compile
// without a [[nodiscard]] warning (an error here), and the value form stays for const and
// temporary arguments.
#pragma GCC diagnostic error "-Wunused-result"
#include <array>
#include <functional>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpidist/elementwise_reduce.hpp"
#include "mpidist/objects.hpp"

void step(const mpidist::Communicator& comm) {
  std::vector<double> grad(4);
  std::array<int, 3> counts{};
  mpidist::all_reduce(grad, mpidist::ReduceOp::Avg);
  mpidist::all_reduce(comm, counts, mpidist::ReduceOp::Sum);
  mpidist::reduce(grad, mpidist::ReduceOp::Sum, 0);
  mpidist::broadcast(grad, 0);
  mpidist::broadcast(comm, counts);
  static_assert(std::is_void_v<decltype(mpidist::all_reduce(grad))>);
  static_assert(std::is_same_v<decltype(mpidist::all_reduce(std::as_const(grad))), std::vector<double>>);
  static_assert(std::is_same_v<decltype(mpidist::all_reduce(std::vector<double>(4))), std::vector<double>>);
  static_assert(std::is_same_v<decltype(mpidist::broadcast(std::move(grad))), std::vector<double>>);
  // scan and exscan alike; a span is scanned in place too.
  std::vector<long long> sizes(3);
  mpidist::exscan(sizes);
  mpidist::scan(comm, counts, mpidist::ReduceOp::Max);
  mpidist::exscan(std::span(sizes));
  static_assert(std::is_void_v<decltype(mpidist::scan(sizes))>);
  static_assert(std::is_same_v<decltype(mpidist::exscan(std::as_const(sizes))), std::vector<long long>>);
  static_assert(std::is_same_v<decltype(mpidist::exscan(7LL)), long long>);
  // With a function of elements, scan is in place too; exscan has no in-place form (nothing for
  // rank 0 to hold), so its value form's optional is what a non-const vector gets.
  mpidist::scan(sizes, [](long long a, long long b) { return a + b; });
  mpidist::scan(comm, counts, [](auto a, auto b) { return a < b ? b : a; });
  mpidist::scan(std::span(grad), std::plus<>{});
  static_assert(std::is_void_v<decltype(mpidist::scan(sizes, std::plus<>{}))>);
  static_assert(std::is_same_v<decltype(mpidist::exscan(sizes, std::plus<>{})), std::optional<std::vector<long long>>>);
  static_assert(std::is_same_v<decltype(mpidist::scan(std::as_const(sizes), std::plus<>{})), std::vector<long long>>);
}
