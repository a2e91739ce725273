// all_reduce of objects at 1-4 ranks: every ReduceOp on int64 (exact beyond 2^53), double and
// bool; element-wise vectors and arrays, with a ReduceOp and with a function of elements; rows of
// numbers; key-wise metrics and their mismatched keys.
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using ObjectsReduceTest = mpidist_test::MpiTest;
using mpidist::ReduceOp;

int rank() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }

// The expected reduction, computed the obvious way from every rank's value.
template <class T, class Make>
T expected(ReduceOp op, Make make) {
  T acc = make(0);
  for (int r = 1; r < size(); ++r) {
    const T v = make(r);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:
        acc = static_cast<T>(acc + v);
        break;
      case ReduceOp::Product:
        acc = static_cast<T>(acc * v);
        break;
      case ReduceOp::Min:
        acc = std::min(acc, v);
        break;
      case ReduceOp::Max:
        acc = std::max(acc, v);
        break;
      case ReduceOp::And:
        acc = static_cast<T>(acc != T(0) && v != T(0));
        break;
      case ReduceOp::Or:
        acc = static_cast<T>(acc != T(0) || v != T(0));
        break;
      case ReduceOp::BitAnd:
      case ReduceOp::BitOr:
      case ReduceOp::BitXor:
        if constexpr (std::is_integral_v<T>)
          acc = static_cast<T>(op == ReduceOp::BitAnd ? acc & v : op == ReduceOp::BitOr ? acc | v : acc ^ v);
        break;
    }
  }
  if (op == ReduceOp::And || op == ReduceOp::Or) acc = static_cast<T>(acc != T(0));
  if (op == ReduceOp::Avg) acc = static_cast<T>(acc / static_cast<T>(size()));
  return acc;
}

constexpr ReduceOp all_ops[] = {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Min, ReduceOp::Max,
                                ReduceOp::Avg, ReduceOp::And,     ReduceOp::Or};

TEST_F(ObjectsReduceTest, Int64BeyondTwoToTheFiftyThreeIsExact) {
  const std::int64_t big = (std::int64_t{1} << 60) + 12345;  // float would round this
  auto make = [&](int r) { return big + r; };
  for (ReduceOp op : all_ops) {
    if (op == ReduceOp::Product) continue;
    EXPECT_EQ(mpidist::all_reduce(make(rank()), op), expected<std::int64_t>(op, make)) << mpidist::to_string(op);
  }
  // Products past 2^53: (2^14 + 1 + r) multiplied over up to 4 ranks.
  auto factor = [](int r) { return (std::int64_t{1} << 14) + 1 + r; };
  EXPECT_EQ(mpidist::all_reduce(factor(rank()), ReduceOp::Product), expected<std::int64_t>(ReduceOp::Product, factor));
  // And/Or are logical: zero on rank 0 only.
  auto zero_first = [](int r) { return static_cast<std::int64_t>(r == 0 ? 0 : 5 * r); };
  EXPECT_EQ(mpidist::all_reduce(zero_first(rank()), ReduceOp::And), expected<std::int64_t>(ReduceOp::And, zero_first));
  EXPECT_EQ(mpidist::all_reduce(zero_first(rank()), ReduceOp::Or), expected<std::int64_t>(ReduceOp::Or, zero_first));
  // Avg truncates toward zero.
  EXPECT_EQ(mpidist::all_reduce(static_cast<std::int64_t>(rank() == 0 ? -7 : 0), ReduceOp::Avg), -7 / size());
}

TEST_F(ObjectsReduceTest, EveryOpOnDouble) {
  auto make = [](int r) { return 0.5 + 1.25 * r; };
  for (ReduceOp op : all_ops)
    EXPECT_DOUBLE_EQ(mpidist::all_reduce(make(rank()), op), expected<double>(op, make)) << mpidist::to_string(op);
  auto zero_last = [](int r) { return r == size() - 1 ? 0.0 : -2.5; };
  EXPECT_EQ(mpidist::all_reduce(zero_last(rank()), ReduceOp::And), expected<double>(ReduceOp::And, zero_last));
  EXPECT_EQ(mpidist::all_reduce(zero_last(rank()), ReduceOp::Or), expected<double>(ReduceOp::Or, zero_last));
}

TEST_F(ObjectsReduceTest, EveryOpOnBool) {
  const bool odd = rank() % 2 == 1;  // true somewhere only with 2+ ranks
  const bool any = size() > 1, all = false;
  EXPECT_EQ(mpidist::all_reduce(odd, ReduceOp::Sum), any);
  EXPECT_EQ(mpidist::all_reduce(odd, ReduceOp::Max), any);
  EXPECT_EQ(mpidist::all_reduce(odd, ReduceOp::Or), any);
  EXPECT_EQ(mpidist::all_reduce(odd, ReduceOp::Product), all);
  EXPECT_EQ(mpidist::all_reduce(odd, ReduceOp::Min), all);
  EXPECT_EQ(mpidist::all_reduce(odd, ReduceOp::And), all);
  EXPECT_EQ(mpidist::all_reduce(odd, ReduceOp::Avg), all);
  for (ReduceOp op : all_ops) EXPECT_TRUE(mpidist::all_reduce(true, op)) << mpidist::to_string(op);
  for (ReduceOp op : all_ops) EXPECT_FALSE(mpidist::all_reduce(false, op)) << mpidist::to_string(op);
}

TEST_F(ObjectsReduceTest, BitwiseOnIntegersAndBool) {
  // Which ranks reached a point, as a mask; their ids' bits; an int8 whose sign bit differs by rank.
  const auto me = static_cast<std::uint64_t>(rank());
  const std::uint64_t everyone = size() == 64 ? ~0ull : (1ull << size()) - 1;
  EXPECT_EQ(mpidist::all_reduce(1ull << me, ReduceOp::BitOr), everyone);
  EXPECT_EQ(mpidist::all_reduce(~(1ull << me), ReduceOp::BitAnd), ~everyone);
  EXPECT_EQ(mpidist::all_reduce(1ull << me, ReduceOp::BitXor), everyone);
  const auto bits = [](int r) { return static_cast<std::int8_t>(r % 2 ? -1 - r : r * 3); };
  for (const ReduceOp op : {ReduceOp::BitAnd, ReduceOp::BitOr, ReduceOp::BitXor}) {
    EXPECT_EQ(mpidist::all_reduce(bits(rank()), op), expected<std::int8_t>(op, bits)) << mpidist::to_string(op);
    std::vector<std::uint32_t> words(1000);
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = static_cast<std::uint32_t>((me + 1) * 2654435761u * (i + 1));
    const auto got = mpidist::all_reduce(std::as_const(words), op);
    ASSERT_EQ(got.size(), words.size());
    for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{998}, std::size_t{999}})
      EXPECT_EQ(got[i], expected<std::uint32_t>(op, [&](int r) {
                  return static_cast<std::uint32_t>((static_cast<std::uint32_t>(r) + 1) * 2654435761u * (i + 1));
                }))
          << mpidist::to_string(op) << " [" << i << "]";
    // bool: and, or and xor of the odd ranks; a metrics map; to the last rank only.
    const bool odd = rank() % 2 == 1;
    EXPECT_EQ(mpidist::all_reduce(odd, op), expected<bool>(op, [](int r) { return r % 2 == 1; })) << mpidist::to_string(op);
    const std::map<std::string, int> flags{{"a", rank()}, {"b", 6}};
    EXPECT_EQ(mpidist::all_reduce(flags, op).at("a"), expected<int>(op, [](int r) { return r; }));
    const auto at_last = mpidist::reduce(bits(rank()), op, size() - 1);
    EXPECT_EQ(at_last.has_value(), rank() == size() - 1);
    if (at_last) {
      EXPECT_EQ(*at_last, expected<std::int8_t>(op, bits));
    }
  }
  // Floating-point numbers have no bits to combine: an Error on every rank, then a right call.
  mpidist_test::expect_error([&] { (void)mpidist::all_reduce(1.5, ReduceOp::BitXor); },
                             {"all_reduce", "'bxor'", "floating-point"});
  mpidist_test::expect_error([&] { (void)mpidist::all_reduce(std::vector<float>(3), ReduceOp::BitOr); }, {"'bor'"});
  EXPECT_EQ(mpidist::all_reduce(1ull << me, ReduceOp::BitOr), everyone);
}

TEST_F(ObjectsReduceTest, OtherScalarTypes) {
  EXPECT_EQ(mpidist::all_reduce(static_cast<std::uint8_t>(1)), static_cast<std::uint8_t>(size()));
  EXPECT_EQ(mpidist::all_reduce(static_cast<std::int16_t>(-rank()), ReduceOp::Min),
            static_cast<std::int16_t>(1 - size()));
  EXPECT_EQ(mpidist::all_reduce(static_cast<std::uint64_t>(~0ull - rank()), ReduceOp::Max), ~0ull);
  EXPECT_FLOAT_EQ(mpidist::all_reduce(2.0f, ReduceOp::Avg), 2.0f);
  EXPECT_EQ(mpidist::all_reduce(static_cast<long double>(rank()), ReduceOp::Max), static_cast<long double>(size() - 1));
}

// Values on both sides of the signed range: an MPI that compares unsigned types as signed
// (MPICH 4.0.2) would take the large ones for negative numbers.
template <class T>
void expect_unsigned_extrema(int rank, int size) {
  const T large = std::numeric_limits<T>::max() - 2;
  const T mine = rank == 0 ? T(1) : static_cast<T>(large - static_cast<T>(rank - 1));
  EXPECT_EQ(mpidist::all_reduce(mine, ReduceOp::Min), T(1)) << sizeof(T);
  EXPECT_EQ(mpidist::all_reduce(mine, ReduceOp::Max), size == 1 ? T(1) : large) << sizeof(T);
  // Element-wise: rank 0 holds {1, large}, the others {large - k, 1}.
  const std::vector<T> pair = rank == 0 ? std::vector<T>{T(1), large} : std::vector<T>{mine, T(1)};
  EXPECT_EQ(mpidist::all_reduce(pair, ReduceOp::Min), (std::vector<T>{T(1), size == 1 ? large : T(1)})) << sizeof(T);
  EXPECT_EQ(mpidist::all_reduce(pair, ReduceOp::Max), (std::vector<T>{size == 1 ? T(1) : large, large})) << sizeof(T);
}

TEST_F(ObjectsReduceTest, UnsignedMinAndMaxCompareAsUnsigned) {
  expect_unsigned_extrema<std::uint8_t>(rank(), size());
  expect_unsigned_extrema<std::uint16_t>(rank(), size());
  expect_unsigned_extrema<std::uint32_t>(rank(), size());
  expect_unsigned_extrema<std::uint64_t>(rank(), size());
}

TEST_F(ObjectsReduceTest, ElementWiseVectorsAndArrays) {
  const std::vector<float> v{1.f, static_cast<float>(rank()), -static_cast<float>(rank())};
  const auto sum = mpidist::all_reduce(v);
  const float ranks_sum = static_cast<float>(size() * (size() - 1) / 2);
  EXPECT_EQ(sum, (std::vector<float>{static_cast<float>(size()), ranks_sum, -ranks_sum}));
  EXPECT_EQ(mpidist::all_reduce(v, ReduceOp::Max), (std::vector<float>{1.f, static_cast<float>(size() - 1), 0.f}));
  EXPECT_TRUE(mpidist::all_reduce(std::vector<double>{}).empty());
  const std::array<std::int64_t, 3> a{rank(), 10, (std::int64_t{1} << 55) + rank()};
  const auto amax = mpidist::all_reduce(a, ReduceOp::Max);
  EXPECT_EQ(amax[0], size() - 1);
  EXPECT_EQ(amax[2], (std::int64_t{1} << 55) + size() - 1);
  const std::vector<bool> flags{true, rank() == 0, false};
  EXPECT_EQ(mpidist::all_reduce(flags, ReduceOp::And), (std::vector<bool>{true, size() == 1, false}));
  EXPECT_EQ(mpidist::all_reduce(flags, ReduceOp::Or), (std::vector<bool>{true, true, false}));
}

TEST_F(ObjectsReduceTest, DifferentLengthsAreErrorsEverywhere) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  try {
    (void)mpidist::all_reduce(std::vector<double>(static_cast<std::size_t>(3 + rank()), 1.0));
    ADD_FAILURE() << "no Error";
  } catch (const mpidist::Error& e) {
    EXPECT_NE(e.detail().find("shortest 3, longest " + std::to_string(2 + size())), std::string::npos) << e.what();
  }
}

// Rows of numbers (a confusion matrix, per-class histograms): a std::vector of vectors or of
// arrays, under every op, element by element against expected(), reduce to the last rank (the
// others get nothing), a group of the odd ranks; rows of lengths that differ between the ranks
// are an Error on every rank naming the row, and the next call is right.
TEST_F(ObjectsReduceTest, RowsOfNumbersElementByElement) {
  const auto cell = [](int r, std::size_t i, std::size_t j) { return static_cast<std::int64_t>(r * 7 + i * 3 + j + 1); };
  const auto matrix = [&](int r) {
    std::vector<std::vector<std::int64_t>> m{std::vector<std::int64_t>(4), {}, std::vector<std::int64_t>(2)};
    for (std::size_t i = 0; i < m.size(); ++i)
      for (std::size_t j = 0; j < m[i].size(); ++j) m[i][j] = cell(r, i, j);
    return m;
  };
  for (const ReduceOp op : all_ops) {
    const auto got = mpidist::all_reduce(matrix(rank()), op);
    ASSERT_EQ(got.size(), 3u);
    for (std::size_t i = 0; i < got.size(); ++i)
      for (std::size_t j = 0; j < got[i].size(); ++j)
        EXPECT_EQ(got[i][j], expected<std::int64_t>(op, [&](int r) { return cell(r, i, j); }))
            << mpidist::to_string(op) << " [" << i << "][" << j << "]";
    EXPECT_EQ(got[1].size(), 0u);
  }
  std::vector<std::array<double, 3>> histograms(2, {rank() * 0.5, 1.0, -rank() * 1.0});
  histograms = mpidist::all_reduce(histograms, ReduceOp::Max);
  EXPECT_EQ(histograms[1], (std::array<double, 3>{(size() - 1) * 0.5, 1.0, 0.0}));
  const auto at_last = mpidist::reduce(matrix(rank()), ReduceOp::Sum, size() - 1);
  EXPECT_EQ(at_last.has_value(), rank() == size() - 1);
  if (at_last) {
    EXPECT_EQ((*at_last)[2][1], expected<std::int64_t>(ReduceOp::Sum, [&](int r) { return cell(r, 2, 1); }));
  }
  std::vector<std::vector<bool>> seen{{rank() == 0, false}, {true}};
  seen = mpidist::all_reduce(seen, ReduceOp::Or);
  EXPECT_EQ(seen, (std::vector<std::vector<bool>>{{true, false}, {true}}));
  const auto odd = mpidist::world().split(rank() % 2, -rank());
  const auto odd_sum = mpidist::all_reduce(odd, std::vector<std::vector<float>>{{1.0f, 2.0f}}, ReduceOp::Sum);
  EXPECT_EQ(odd_sum, (std::vector<std::vector<float>>{{1.0f * odd.size(), 2.0f * odd.size()}}));
  if (size() > 1) {
    std::vector<std::vector<float>> ragged{{1.0f}, std::vector<float>(rank() == 0 ? 2 : 3)};
    mpidist_test::expect_error([&] { (void)mpidist::all_reduce(ragged, ReduceOp::Sum); },
                               {"all_reduce", "the length of row 1 is 2 on some ranks and 3 on others"});
    std::vector<std::vector<float>> more_rows(static_cast<std::size_t>(1 + rank()), std::vector<float>(2));
    mpidist_test::expect_error([&] { (void)mpidist::all_reduce(more_rows, ReduceOp::Sum); },
                               {"all_reduce", "the row count is 1 on some ranks and " + std::to_string(size()) + " on others"});
  }
  EXPECT_EQ(mpidist::all_reduce(std::vector<std::vector<int>>{{1}, {2, 3}}, ReduceOp::Sum),
            (std::vector<std::vector<int>>{{size()}, {2 * size(), 3 * size()}}));
}

// A function of elements (MPI_Op_create's user function, a lambda) on a std::vector, a
// std::array, a span and a group, all_reduce and reduce: index by index, in place, in rank order (a non-commutative fn
// gives the same answer everywhere); a function of whole vectors keeps the object form.
TEST_F(ObjectsReduceTest, FunctionOfElementsReducesContainersInPlace) {
  const int r = rank(), n = size();
  std::vector<float> v{static_cast<float>(r), 1.0f, -static_cast<float>(r)};
  mpidist::all_reduce(v, [](float a, float b) { return std::max(a, b); });
  EXPECT_EQ(v, (std::vector<float>{static_cast<float>(n - 1), 1.0f, 0.0f}));
  std::array<std::int32_t, 2> a{r, 1};
  mpidist::all_reduce(a, std::plus<>{});
  EXPECT_EQ(a, (std::array<std::int32_t, 2>{n * (n - 1) / 2, n}));
  std::vector<long long> w(1000, r + 1);
  mpidist::all_reduce(std::span<long long>(w), [](long long x, long long y) { return x * y; });
  long long factorial = 1;
  for (int i = 1; i <= n; ++i) factorial *= i;
  EXPECT_EQ(w, std::vector<long long>(1000, factorial));
  std::vector<std::string> words{std::to_string(r), "x"};
  const auto half = mpidist::world().split(r % 2, -r);  // ranks run backwards in the group
  mpidist::all_reduce(half, words, [](const std::string& x, const std::string& y) { return x + y; });
  std::string backwards;
  for (int i = n - 1; i >= 0; --i)
    if (i % 2 == r % 2) backwards += std::to_string(i);
  EXPECT_EQ(words, (std::vector<std::string>{backwards, std::string(static_cast<std::size_t>(half.size()), 'x')}));
  std::vector<double> empty;
  mpidist::all_reduce(empty, std::plus<>{});
  EXPECT_TRUE(empty.empty());
  // reduce to the last rank: its values become the reduction, the others' stay as they are.
  std::vector<int> mine{r, 1}, at_root(2, r);
  mpidist::reduce(mine, [](int x, int y) { return x + y; }, n - 1);
  mpidist::reduce(std::span<int>(at_root), [](int x, int y) { return std::max(x, y); }, n - 1);
  if (r == n - 1) {
    EXPECT_EQ(mine, (std::vector<int>{n * (n - 1) / 2, n}));
    EXPECT_EQ(at_root, std::vector<int>(2, n - 1));
  } else {
    EXPECT_EQ(mine, (std::vector<int>{r, 1}));
    EXPECT_EQ(at_root, std::vector<int>(2, r));
  }
  // A function of two whole vectors is the object form: the value is returned, v left as it is.
  const auto longer = [](std::vector<float> x, const std::vector<float>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  const std::vector<float> joined = mpidist::all_reduce(v, longer);
  EXPECT_EQ(joined.size(), 3u * static_cast<std::size_t>(n));
  EXPECT_EQ(v.size(), 3u);
}

// Generic lambdas, as users write them: a function that takes two elements reduces element by
// element, in place or (a const vector) as the returned value, and is never tried on two whole
// vectors (`a + b` would not compile there; std::max would pick the larger vector, not the larger
// elements).
TEST_F(ObjectsReduceTest, GenericLambdasReduceElementByElement) {
  const int r = rank(), n = size();
  std::vector<float> v{static_cast<float>(r), -static_cast<float>(r)};
  mpidist::all_reduce(v, [](auto a, auto b) { return std::max(a, b); });
  EXPECT_EQ(v, (std::vector<float>{static_cast<float>(n - 1), 0.0f}));  // the larger vector: {n - 1, 1 - n}
  std::vector<long long> counts{r + 1, 1};
  mpidist::all_reduce(counts, [](auto a, auto b) { return a + b; });
  EXPECT_EQ(counts, (std::vector<long long>{n * (n + 1) / 2, n}));
  const std::vector<int> mine{r, 2 * r};
  const std::vector<int> summed = mpidist::all_reduce(mine, [](auto a, auto b) { return a + b; });
  EXPECT_EQ(summed, (std::vector<int>{n * (n - 1) / 2, n * (n - 1)}));
  EXPECT_EQ(mine, (std::vector<int>{r, 2 * r}));
  const auto at_root = mpidist::reduce(mine, [](int a, int b) { return std::max(a, b); }, n - 1);
  EXPECT_EQ(at_root.has_value(), r == n - 1);
  if (at_root) {
    EXPECT_EQ(*at_root, (std::vector<int>{n - 1, 2 * (n - 1)}));
  }
  std::vector<std::string> words{std::to_string(r), "x"};
  mpidist::all_reduce(words, [](auto a, auto b) { return a + b; });  // each word, in rank order
  std::string ranks;
  for (int i = 0; i < n; ++i) ranks += std::to_string(i);
  EXPECT_EQ(words, (std::vector<std::string>{ranks, std::string(static_cast<std::size_t>(n), 'x')}));
  std::array<unsigned, 2> bits{1u << r, 1u};
  mpidist::all_reduce(bits, [](auto a, auto b) { return a | b; });
  EXPECT_EQ(bits[0], (1u << n) - 1u);
  // A string is one value, not a vector of elements: a generic lambda concatenates whole strings.
  EXPECT_EQ(mpidist::all_reduce(std::to_string(r), [](auto a, auto b) { return a + b; }), ranks);
}

// Lengths that differ are an Error on every rank naming the rank; the world goes on. An exception
// in the function is an Error on every rank too.
TEST_F(ObjectsReduceTest, FunctionOfElementsOnDifferentLengthsIsAnErrorEverywhere) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<float> bad(rank() == 1 ? 2 : 3, 1.0f);
  mpidist_test::expect_error([&] { mpidist::all_reduce(bad, std::plus<>{}); },
                             {"all_reduce", "rank 1 holds 2 elements where rank 0 holds 3"});
  std::vector<int> ones(4, 1);
  mpidist_test::expect_error([&] {
    mpidist::all_reduce(ones, [](int, int) -> int { throw std::runtime_error("no reduction today"); });
  }, {"all_reduce", "no reduction today"});
  mpidist::all_reduce(ones, std::plus<>{});
  EXPECT_EQ(ones, std::vector<int>(4, size()));
}

TEST_F(ObjectsReduceTest, MetricsKeyWise) {
  const std::map<std::string, double> metrics{{"loss", 1.0 + rank()}, {"acc", 0.5}, {"tokens", 100.0 * (rank() + 1)}};
  const auto avg = mpidist::all_reduce(metrics, ReduceOp::Avg);
  EXPECT_DOUBLE_EQ(avg.at("loss"), 1.0 + (size() - 1) / 2.0);
  EXPECT_DOUBLE_EQ(avg.at("acc"), 0.5);
  const auto sum = mpidist::all_reduce(metrics);
  EXPECT_DOUBLE_EQ(sum.at("tokens"), 100.0 * size() * (size() + 1) / 2);
  EXPECT_DOUBLE_EQ(mpidist::all_reduce(metrics, ReduceOp::Max).at("loss"), static_cast<double>(size()));
}

// Metrics as users hold them: float values, an unordered_map (whose order differs by rank),
// integer keys, integer values beyond a double's 53 bits, bools.
TEST_F(ObjectsReduceTest, MetricsOfAnyMapOfNumbers) {
  const int n = size();
  const std::map<std::string, float> losses{{"loss", 1.0f + rank()}, {"acc", 0.5f}};
  const auto avg = mpidist::all_reduce(losses, ReduceOp::Avg);
  EXPECT_FLOAT_EQ(avg.at("loss"), 1.0f + (n - 1) / 2.0f);
  EXPECT_FLOAT_EQ(avg.at("acc"), 0.5f);

  std::unordered_map<std::string, double> unordered;
  for (int k = 0; k < 16; ++k) unordered["m" + std::to_string((k + rank() * 5) % 16)] = (k + rank() * 5) % 16 + rank();
  const auto summed = mpidist::all_reduce(unordered);
  for (int k = 0; k < 16; ++k) EXPECT_DOUBLE_EQ(summed.at("m" + std::to_string(k)), k * n + n * (n - 1) / 2.0) << k;

  const std::int64_t big = std::int64_t{1} << 60;
  const std::map<int, std::int64_t> counts{{7, big + rank()}, {-1, 3}};
  const auto total = mpidist::all_reduce(counts);
  EXPECT_EQ(total.at(7), big * n + n * (n - 1) / 2);  // exact: integers never pass through double
  EXPECT_EQ(total.at(-1), 3 * n);
  EXPECT_EQ(mpidist::all_reduce(counts, ReduceOp::Avg).at(7), big + (n - 1) / 2);

  const std::unordered_map<std::string, bool> flags{{"diverged", rank() == n - 1}, {"ok", true}};
  const auto any = mpidist::all_reduce(flags, ReduceOp::Or);
  EXPECT_TRUE(any.at("diverged"));
  EXPECT_TRUE(mpidist::all_reduce(flags, ReduceOp::And).at("ok"));
  EXPECT_EQ(mpidist::all_reduce(flags, ReduceOp::And).at("diverged"), n == 1);

  const int root = n - 1;
  const auto on_root = mpidist::reduce(std::unordered_map<std::string, float>{{"x", 2.0f * rank()}}, ReduceOp::Max, root);
  EXPECT_EQ(on_root.has_value(), rank() == root || n == 1);
  if (on_root) {
    EXPECT_FLOAT_EQ(on_root->at("x"), 2.0f * (n - 1));
  }

  const auto world = mpidist::world();
  const auto backwards = world.split(0, n - rank());
  const auto in_group = mpidist::all_reduce(backwards, std::map<unsigned, double>{{1u, 1.0 * backwards.rank()}});
  EXPECT_DOUBLE_EQ(in_group.at(1u), n * (n - 1) / 2.0);
}

TEST_F(ObjectsReduceTest, MismatchedIntegerKeysNameTheMissingKeys) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  std::unordered_map<int, float> per_class{{0, 1.0f}};
  if (rank() == 1) per_class[42] = 2.0f;
  mpidist_test::expect_error([&] { (void)mpidist::all_reduce(per_class, ReduceOp::Sum); },
                             {"all_reduce", "metric keys differ", "rank 0 lacks '42'"});
  EXPECT_EQ(mpidist::all_reduce(1), size());  // still in step
}

TEST_F(ObjectsReduceTest, MismatchedMetricKeysNameTheMissingKeys) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  std::map<std::string, double> metrics{{"loss", 1.0}};
  if (rank() == 0) metrics["acc"] = 0.9;
  if (rank() == size() - 1) metrics["grad_norm"] = 3.0;
  try {
    (void)mpidist::all_reduce(metrics, ReduceOp::Avg);
    ADD_FAILURE() << "no Error";
  } catch (const mpidist::Error& e) {
    const std::string detail = e.detail();
    EXPECT_NE(detail.find("metric keys differ"), std::string::npos) << detail;
    EXPECT_NE(detail.find("rank 0 lacks 'grad_norm'"), std::string::npos) << detail;
    EXPECT_NE(detail.find("rank " + std::to_string(size() - 1) + " lacks 'acc'"), std::string::npos) << detail;
  }
  EXPECT_EQ(mpidist::all_reduce(1), size());  // still in step
}

}  // namespace
