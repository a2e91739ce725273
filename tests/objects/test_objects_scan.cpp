// scan and exscan (MPI_Scan, MPI_Exscan) at 1-5 ranks: offsets of uneven parts; every ReduceOp on
// integers, doubles, bool and complex numbers against a fold of every rank's value, exscan's
// identity on rank 0; vectors, arrays and spans element by element, in place and by value; groups
// in their own rank order; lengths that differ and Avg as Errors on every rank, then a right call.
// With a function: any object in rank order (strings, pairs), containers index by index in place,
// exscan's nothing on rank 0, the function's exception an Error on every rank.
#include <array>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/elementwise_reduce.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using ObjectsScanTest = mpidist_test::MpiTest;
using mpidist::Communicator;
using mpidist::ReduceOp;
using mpidist_test::expect_error;

// `op` on two values as MPI combines them (logical ops give 0 or 1).
template <class T>
T combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Sum: return static_cast<T>(a + b);
    case ReduceOp::Product: return static_cast<T>(a * b);
    case ReduceOp::Min: return b < a ? b : a;
    case ReduceOp::Max: return a < b ? b : a;
    case ReduceOp::And: return static_cast<T>(a != T(0) && b != T(0));
    case ReduceOp::Or: return static_cast<T>(a != T(0) || b != T(0));
    case ReduceOp::BitAnd: return static_cast<T>(a & b);
    case ReduceOp::BitOr: return static_cast<T>(a | b);
    case ReduceOp::BitXor: return static_cast<T>(a ^ b);
    case ReduceOp::Avg: break;
  }
  return T(0);
}

// The fold of values[0..end) under op, from its identity.
template <class T>
T fold(ReduceOp op, const std::vector<T>& values, int end, T identity) {
  T acc = identity;
  for (int r = 0; r < end; ++r) acc = combine(op, acc, values[static_cast<std::size_t>(r)]);
  return acc;
}

TEST_F(ObjectsScanTest, OffsetsOfUnevenPartsLaidEndToEnd) {
  const int me = mpidist::rank();
  const long long count = 3 + 2LL * me;  // rank r holds 3 + 2r elements
  long long before = 0;
  for (int r = 0; r < me; ++r) before += 3 + 2LL * r;
  EXPECT_EQ(mpidist::exscan(count), before);
  EXPECT_EQ(mpidist::scan(count), before + count);
  // Integers exact past 2^53, in their own type.
  const std::uint64_t big = (std::uint64_t{1} << 60) + static_cast<std::uint64_t>(me);
  std::uint64_t big_before = 0;
  for (int r = 0; r < me; ++r) big_before += (std::uint64_t{1} << 60) + static_cast<std::uint64_t>(r);
  EXPECT_EQ(mpidist::exscan(big), big_before);
}

TEST_F(ObjectsScanTest, EveryOpOnIntegersAgainstAFold) {
  const int me = mpidist::rank();
  const auto value_of = [](int r) { return static_cast<std::int32_t>((r * 7) % 5 - 2 + (r == 2 ? 10 : 0)); };
  std::vector<std::int32_t> all;
  for (int r = 0; r < mpidist::world_size(); ++r) all.push_back(value_of(r));
  const std::int32_t mine = value_of(me);
  using limits = std::numeric_limits<std::int32_t>;
  const std::pair<ReduceOp, std::int32_t> ops[] = {
      {ReduceOp::Sum, 0},           {ReduceOp::Product, 1},   {ReduceOp::Min, limits::max()},
      {ReduceOp::Max, limits::lowest()}, {ReduceOp::And, 1}, {ReduceOp::Or, 0},
      {ReduceOp::BitAnd, -1},       {ReduceOp::BitOr, 0},     {ReduceOp::BitXor, 0}};
  for (const auto& [op, identity] : ops) {
    EXPECT_EQ(mpidist::scan(mine, op), fold(op, all, me + 1, identity)) << mpidist::to_string(op);
    EXPECT_EQ(mpidist::exscan(mine, op), fold(op, all, me, identity)) << mpidist::to_string(op);
  }
}

TEST_F(ObjectsScanTest, DoublesBoolsAndComplexNumbers) {
  const int me = mpidist::rank();
  double sum = 0, low = std::numeric_limits<double>::infinity();
  for (int r = 0; r < me; ++r) sum += 0.5 * r, low = std::min(low, 10.0 - r);
  EXPECT_EQ(mpidist::exscan(0.5 * me), sum);
  EXPECT_EQ(mpidist::exscan(10.0 - me, ReduceOp::Min), low);  // +inf on rank 0
  EXPECT_EQ(mpidist::exscan(1.5, ReduceOp::Max), me == 0 ? -std::numeric_limits<double>::infinity() : 1.5);
  EXPECT_EQ(mpidist::scan(me == 1 ? 0.0 : 2.5, ReduceOp::And), me >= 1 ? 0.0 : 1.0);  // logical: 0 or 1
  // bool: "any" and "all" of the ranks before (and up to) this one.
  const bool odd = me % 2 == 1;
  EXPECT_EQ(mpidist::exscan(odd, ReduceOp::Or), me >= 2);
  EXPECT_EQ(mpidist::scan(odd, ReduceOp::Or), me >= 1);
  EXPECT_EQ(mpidist::exscan(odd, ReduceOp::And), me == 0);  // rank 0: all of none is true
  EXPECT_EQ(mpidist::scan(!odd, ReduceOp::Product), me == 0);
  // complex: sums and products.
  const std::complex<double> z(me, 1.0);
  std::complex<double> zsum(0, 0), zbefore(1, 0);
  for (int r = 0; r <= me; ++r) zsum += std::complex<double>(r, 1.0);
  for (int r = 0; r < me; ++r) zbefore *= std::complex<double>(r, 1.0);  // small integers: exact
  EXPECT_EQ(mpidist::scan(z), zsum);
  EXPECT_EQ(mpidist::exscan(z, ReduceOp::Product), zbefore);  // (1, 0) on rank 0
}

TEST_F(ObjectsScanTest, VectorsArraysAndSpansElementByElement) {
  const int me = mpidist::rank();
  const auto values = [](int r) { return std::vector<long long>{r, 10LL * r, -r, 7}; };
  std::vector<long long> before(4, 0), upto(4, 0);
  for (int r = 0; r <= me; ++r)
    for (std::size_t i = 0; i < 4; ++i) (r < me ? before[i] : upto[i]) += values(r)[i];
  for (std::size_t i = 0; i < 4; ++i) upto[i] += before[i];
  // A const vector and a temporary take the value form; a non-const one is scanned in place.
  const std::vector<long long> kept = values(me);
  EXPECT_EQ(mpidist::scan(kept), upto);
  EXPECT_EQ(mpidist::exscan(values(me)), before);
  std::vector<long long> v = values(me);
  mpidist::exscan(v);
  EXPECT_EQ(v, before);
  std::vector<long long> w = values(me);
  mpidist::scan(std::span(w));  // a span, in place
  EXPECT_EQ(w, upto);
  std::array<int, 3> a{me, -me, 5};
  mpidist::scan(a, ReduceOp::Max);
  EXPECT_EQ(a, (std::array<int, 3>{me, 0, 5}));
  std::vector<bool> flags{me % 2 == 1, true, me == 0};
  mpidist::exscan(flags, ReduceOp::Or);
  EXPECT_EQ(flags, (std::vector<bool>{me >= 2, me >= 1, me >= 1}));
  std::vector<float> none;
  mpidist::scan(none);
  EXPECT_TRUE(none.empty());
}

// A group in its own order: a split that reverses the ranks, and one that leaves rank 0 out.
TEST_F(ObjectsScanTest, OnAGroupInItsOwnRankOrder) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  const Communicator reversed = mpidist::world().split(0, -me);
  long long expected = 0;
  for (int g = 0; g < reversed.rank(); ++g) expected += reversed.world_rank(g);
  EXPECT_EQ(mpidist::exscan(reversed, static_cast<long long>(me)), expected);
  std::vector<int> ones(2, 1);
  mpidist::scan(reversed, ones);
  EXPECT_EQ(ones, std::vector<int>(2, reversed.rank() + 1));
  const Communicator rest = mpidist::world().split(me == 0 ? Communicator::undefined : 1, me);
  if (rest) {
    EXPECT_EQ(mpidist::scan(rest, 1), rest.rank() + 1);
    EXPECT_EQ(rest.size(), n - 1);
  }
}

TEST_F(ObjectsScanTest, ErrorsOnEveryRankThenARightCall) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  expect_error([] { (void)mpidist::exscan(2.0, ReduceOp::Avg); }, {"exscan", "avg", "no prefix form"});
  expect_error([] { (void)mpidist::scan(2.0, ReduceOp::BitXor); }, {"scan", "bits of integers"});
  expect_error([] { (void)mpidist::scan(std::complex<float>(1, 1), ReduceOp::Min); }, {"scan", "complex"});
  if (n > 1) {
    std::vector<int> uneven(me == n - 1 ? 3 : 2, 1);
    expect_error([&] { mpidist::scan(uneven); }, {"scan", "lengths differ", "shortest 2", "longest 3"});
  }
  EXPECT_EQ(mpidist::exscan(1), me);
}

TEST_F(ObjectsScanTest, InsideMainProcessContextAGroupOfOne) {
  mpidist::MainProcessContext main_only;
  EXPECT_EQ(mpidist::scan(5), 5);
  EXPECT_EQ(mpidist::exscan(5), 0);
  EXPECT_EQ(mpidist::exscan(5, ReduceOp::Product), 1);
  EXPECT_EQ(mpidist::scan(5, ReduceOp::And), 1);
  EXPECT_EQ(mpidist::exscan(5u, ReduceOp::BitAnd), std::numeric_limits<unsigned>::max());
}

// "0,1,...,last": the ranks' names joined in rank order.
std::string joined(int first, int last) {
  std::string text;
  for (int r = first; r <= last; ++r) text += (r > first ? "," : "") + std::to_string(r);
  return text;
}

TEST_F(ObjectsScanTest, FunctionsFoldEveryObjectInRankOrder) {
  const int me = mpidist::rank();
  const auto comma = [](std::string a, const std::string& b) { return a + "," + b; };  // not commutative
  EXPECT_EQ(mpidist::scan(std::to_string(me), comma), joined(0, me));
  const std::optional<std::string> before = mpidist::exscan(std::to_string(me), comma);
  if (me == 0) EXPECT_FALSE(before.has_value());
  else EXPECT_EQ(before, joined(0, me - 1));
  // MPI_MAXLOC as a prefix: the largest value so far and the lowest rank that holds it.
  const auto value = [](int r) { return static_cast<double>((r * 5) % 3); };  // 0, 2, 1, 0, 2
  std::pair<double, int> best{value(0), 0};
  for (int r = 1; r <= me; ++r)
    if (value(r) > best.first) best = {value(r), r};
  const auto maxloc = [](std::pair<double, int> a, std::pair<double, int> b) { return b.first > a.first ? b : a; };
  EXPECT_EQ(mpidist::scan(std::pair<double, int>{value(me), me}, maxloc), best);
  // A function of whole vectors: every rank's list, laid end to end.
  const auto append = [](std::vector<int> a, const std::vector<int>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  std::vector<int> ranks;
  for (int r = 0; r <= me; ++r) ranks.push_back(r);
  EXPECT_EQ(mpidist::scan(std::vector<int>{me}, append), ranks);
}

TEST_F(ObjectsScanTest, FunctionsOfElementsScanContainersInPlace) {
  const int me = mpidist::rank();
  long long upto = 0;
  for (int r = 0; r <= me; ++r) upto += 10 * r + 1;
  std::vector<long long> v{10LL * me + 1, 1};
  mpidist::scan(v, [](long long a, long long b) { return a + b; });  // a non-const vector: in place
  EXPECT_EQ(v, (std::vector<long long>{upto, me + 1}));
  std::array<int, 2> a{me, -me};
  mpidist::scan(a, [](int x, int y) { return std::max(x, y); });
  EXPECT_EQ(a, (std::array<int, 2>{me, 0}));
  std::vector<float> held{1.0f, 2.0f};
  mpidist::scan(std::span(held), std::multiplies<>{});
  EXPECT_EQ(held, (std::vector<float>{1.0f, static_cast<float>(1 << (me + 1))}));
  // The value form of a const vector with a generic lambda: index by index, the vector kept.
  const std::vector<int> ones(3, 1);
  EXPECT_EQ(mpidist::scan(ones, [](auto x, auto y) { return x + y; }), std::vector<int>(3, me + 1));
  const auto sums = mpidist::exscan(ones, [](auto x, auto y) { return x + y; });
  if (me == 0) EXPECT_FALSE(sums.has_value());
  else EXPECT_EQ(sums, std::vector<int>(3, me));
}

TEST_F(ObjectsScanTest, FunctionsOnAGroupInItsOwnRankOrder) {
  const Communicator reversed = mpidist::world().split(0, -mpidist::rank());
  std::string want;
  for (int g = 0; g <= reversed.rank(); ++g) want += (g ? "," : "") + std::to_string(reversed.world_rank(g));
  const auto comma = [](std::string a, const std::string& b) { return a + "," + b; };
  EXPECT_EQ(mpidist::scan(reversed, std::to_string(mpidist::rank()), comma), want);
  const auto before = mpidist::exscan(reversed, 1, std::plus<>{});
  EXPECT_EQ(before.value_or(0), reversed.rank());
}

// The function's exception and lengths that differ: an Error on every rank, then a right call.
TEST_F(ObjectsScanTest, FunctionErrorsOnEveryRankThenARightCall) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  const auto refuse_three = [](int a, int b) {
    if (b == 3) throw std::runtime_error("three is not welcome");
    return a + b;
  };
  if (n > 1) {
    expect_error([&] { (void)mpidist::scan(me == n - 1 ? 3 : 1, refuse_three); }, {"scan", "three is not welcome"});
    std::vector<int> uneven(me == 1 ? 2 : 3, 1);
    expect_error([&] { mpidist::scan(uneven, std::plus<>{}); }, {"scan", "rank 1 holds 2 elements where rank 0 holds 3"});
  }
  EXPECT_EQ(mpidist::scan(1, refuse_three), me + 1);
}

TEST_F(ObjectsScanTest, FunctionsInsideMainProcessContextAGroupOfOne) {
  mpidist::MainProcessContext main_only;
  const auto never = [](int, int) -> int { throw std::runtime_error("a group of one combines nothing"); };
  EXPECT_EQ(mpidist::scan(5, never), 5);
  EXPECT_FALSE(mpidist::exscan(5, never).has_value());
}

}  // namespace
