// Object collectives on process groups at 1-4 ranks: every communicator-first form on a split of
// the world and on new_group of the odd ranks, roots inside the group, reductions with the
// caller's function (in rank order) and reduce to a root, errors naming the group, and the
// overload resolution between object and tensor forms of the same names.
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using ObjectsGroupsTest = mpidist_test::MpiTest;
using mpidist::Communicator;
using mpidist::ReduceOp;

int rank() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }

// A serialized (not trivially copyable) type with its own operator+, which is not commutative:
// names are appended in order.
struct Tally {
  int count = 0;
  std::string names;
  template <class Archive>
  void serialize(Archive& ar, unsigned int) {
    ar & count & names;
  }
  friend Tally operator+(const Tally& a, const Tally& b) { return {a.count + b.count, a.names + b.names}; }
  bool operator==(const Tally&) const = default;
};

// A 2×2 integer matrix: trivially copyable (sent as its bytes), multiplication is associative
// but not commutative, so the product shows the order the ranks were combined in.
using Matrix = std::array<std::int64_t, 4>;
Matrix multiply(const Matrix& a, const Matrix& b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
          a[2] * b[1] + a[3] * b[3]};
}
Matrix matrix_of(int r) { return {r + 1, 1, 1, 0}; }

// --- Overload resolution: objects vs tensors, world vs communicator-first -----------------------

// The object templates never take a Communicator, a span or a BufferView for the value.
static_assert(!mpidist::detail::ObjectValue<Communicator>);
static_assert(!mpidist::detail::ObjectValue<const Communicator>);
static_assert(!mpidist::detail::ObjectValue<std::span<float>>);
static_assert(!mpidist::detail::ObjectValue<mpidist::BufferView>);
static_assert(!mpidist::detail::Callable<Communicator>);
static_assert(!mpidist::detail::Callable<const Communicator&>);
static_assert(mpidist::detail::ReduceFunction<std::plus<>, std::string>);
static_assert(!mpidist::detail::ReduceFunction<ReduceOp, int>);
static_assert(!mpidist::detail::ReduceFunction<Communicator, int>);

// Tensor calls stay tensor calls (void, in place), with or without a communicator.
static_assert(std::is_void_v<decltype(mpidist::all_reduce(std::declval<const Communicator&>(),
                                                          std::declval<std::span<float>>()))>);
static_assert(std::is_void_v<decltype(mpidist::broadcast(std::declval<const Communicator&>(),
                                                         std::declval<std::span<float>>(), 1))>);
static_assert(std::is_void_v<decltype(mpidist::all_reduce(std::declval<std::span<float>>(), ReduceOp::Avg))>);
static_assert(std::is_void_v<decltype(mpidist::all_reduce(std::declval<const Communicator&>(),
                                                          std::declval<mpidist::BufferView>(), ReduceOp::Max))>);
static_assert(std::is_void_v<decltype(mpidist::reduce(std::declval<std::span<float>>(),
                                                      std::declval<std::span<float>>()))>);
static_assert(std::is_void_v<decltype(mpidist::reduce(std::declval<const Communicator&>(),
                                                      std::declval<mpidist::BufferView>(),
                                                      std::declval<mpidist::BufferView>(), ReduceOp::Sum, 1))>);
// Object calls return values; a communicator first is the group, not the value.
static_assert(std::is_same_v<decltype(mpidist::broadcast(std::declval<const Communicator&>(), 1, 0)), int>);
static_assert(std::is_same_v<decltype(mpidist::broadcast(std::declval<const Communicator&>(), std::string{})),
                             std::string>);
static_assert(std::is_same_v<decltype(mpidist::all_gather(std::declval<const Communicator&>(), 1.0)),
                             std::vector<double>>);
static_assert(std::is_same_v<decltype(mpidist::gather(std::declval<const Communicator&>(), 1)),
                             std::optional<std::vector<int>>>);
static_assert(std::is_same_v<decltype(mpidist::all_reduce(std::declval<const Communicator&>(), 1)), int>);
static_assert(std::is_same_v<decltype(mpidist::all_reduce(std::declval<const Communicator&>(), std::vector<float>{},
                                                          ReduceOp::Max)),
                             std::vector<float>>);
static_assert(std::is_same_v<decltype(mpidist::all_reduce(std::string{}, std::plus<>{})), std::string>);
static_assert(std::is_same_v<decltype(mpidist::all_reduce(std::declval<const Communicator&>(), Tally{}, std::plus<>{})),
                             Tally>);
static_assert(std::is_same_v<decltype(mpidist::reduce(1, ReduceOp::Sum, 0)), std::optional<int>>);
static_assert(std::is_same_v<decltype(mpidist::reduce(std::declval<const Communicator&>(), std::string{},
                                                      std::plus<>{}, 0)),
                             std::optional<std::string>>);
static_assert(std::is_same_v<decltype(mpidist::compute_and_broadcast(std::declval<const Communicator&>(),
                                                                     [] { return 1; })),
                             int>);
static_assert(std::is_same_v<decltype(mpidist::reduce_and_broadcast(
                                 std::declval<const Communicator&>(), [] { return 1; },
                                 [](std::vector<int> v) { return v.size(); })),
                             std::size_t>);
// A ReduceOp on a type it cannot reduce is refused at compile time, not silently wrong: by a
// static_assert that says to pass a function, which a requires-expression cannot see, so the
// refusals are the compile_fail snippets reduce_op_on_* (tests/meson.build).
template <class T>
concept AllReducibleByOp = requires(T v) { mpidist::all_reduce(v, ReduceOp::Sum); };
template <class T>
concept ReducibleByOpToRoot = requires(T v) { mpidist::reduce(v, ReduceOp::Sum, 0); };
static_assert(AllReducibleByOp<int> && AllReducibleByOp<std::vector<double>>);
static_assert(ReducibleByOpToRoot<std::map<std::string, double>>);

// --- Helpers ------------------------------------------------------------------------------------

// Runs `call`, expecting an Error that names `communicator` and whose detail contains `text`.
template <class F>
void expect_error(F&& call, const std::string& communicator, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no Error (expected '" << text << "' on " << communicator << ")";
  } catch (const mpidist::Error& e) {
    EXPECT_EQ(e.communicator(), communicator) << e.what();
    EXPECT_NE(std::string(e.what()).find(" on " + communicator + ": "), std::string::npos) << e.what();
    EXPECT_NE(e.detail().find(text), std::string::npos) << e.what();
  }
}

// Every comm-first object function on `g`, whose group rank i is world rank members[i].
void exercise_group(const Communicator& g, const std::vector<int>& members) {
  const int n = static_cast<int>(members.size());
  ASSERT_EQ(g.size(), n);
  const int me = g.rank();
  ASSERT_EQ(members[static_cast<std::size_t>(me)], rank());
  const int last = n - 1;  // a root other than 0 wherever the group has two ranks

  for (int root : {0, last}) {
    const int from = members[static_cast<std::size_t>(root)];
    EXPECT_EQ(mpidist::broadcast(g, 100 + rank(), root), 100 + from);
    EXPECT_EQ(mpidist::broadcast(g, std::string(static_cast<std::size_t>(rank() + 1), 'x'), root),
              std::string(static_cast<std::size_t>(from + 1), 'x'));
    const Tally mine{rank(), "r" + std::to_string(rank())};
    EXPECT_EQ(mpidist::broadcast(g, mine, root), (Tally{from, "r" + std::to_string(from)}));
    std::vector<float> weights(1000, static_cast<float>(rank()));
    weights = mpidist::broadcast(g, std::move(weights), root);
    EXPECT_EQ(weights, std::vector<float>(1000, static_cast<float>(from)));

    const auto gathered = mpidist::gather(g, std::to_string(rank()), root);
    const auto gathered_ints = mpidist::gather(g, rank(), root);
    if (me == root) {
      std::vector<std::string> expected;
      for (int r : members) expected.push_back(std::to_string(r));
      ASSERT_TRUE(gathered && gathered_ints);
      EXPECT_EQ(*gathered, expected);
      EXPECT_EQ(*gathered_ints, members);
    } else {
      EXPECT_FALSE(gathered || gathered_ints);
    }

    std::vector<std::string> parts;
    if (me == root)
      for (int r : members) parts.push_back("part for " + std::to_string(r));
    EXPECT_EQ(mpidist::scatter(g, parts, root), "part for " + std::to_string(rank()));
    EXPECT_EQ(mpidist::scatter(g, me == root ? members : std::vector<int>{}, root), rank());

    int calls = 0;
    EXPECT_EQ(mpidist::compute_and_broadcast(g, [&] { ++calls; return "from " + std::to_string(rank()); }, root),
              "from " + std::to_string(from));
    EXPECT_EQ(calls, me == root ? 1 : 0);

    const auto results = mpidist::gather_from_all_ranks(g, [] { return Tally{1, std::to_string(rank())}; }, root);
    const auto scalars = mpidist::gather_scalar_from_all_ranks(g, [] { return 0.5 * rank(); }, root);
    if (me == root) {
      ASSERT_TRUE(results && scalars);
      for (int i = 0; i < n; ++i) {
        const int r = members[static_cast<std::size_t>(i)];
        EXPECT_EQ((*results)[static_cast<std::size_t>(i)], (Tally{1, std::to_string(r)}));
        EXPECT_EQ((*scalars)[static_cast<std::size_t>(i)], 0.5 * r);
      }
    } else {
      EXPECT_FALSE(results || scalars);
    }

    // reduce to root, with a ReduceOp and with a function.
    const auto sum = mpidist::reduce(g, static_cast<std::int64_t>(rank()), ReduceOp::Sum, root);
    const auto concatenated = mpidist::reduce(g, std::to_string(rank()), std::plus<>{}, root);
    std::string in_order;
    for (int r : members) in_order += std::to_string(r);
    if (me == root) {
      ASSERT_TRUE(sum && concatenated);
      std::int64_t expected = 0;
      for (int r : members) expected += r;
      EXPECT_EQ(*sum, expected);
      EXPECT_EQ(*concatenated, in_order);
    } else {
      EXPECT_FALSE(sum || concatenated);
    }
  }

  EXPECT_EQ(mpidist::all_gather(g, rank()), members);
  std::vector<std::string> names;
  for (int r : members) names.push_back("rank " + std::to_string(r));
  EXPECT_EQ(mpidist::all_gather(g, "rank " + std::to_string(rank())), names);

  EXPECT_EQ(mpidist::reduce_and_broadcast(
                g, [] { return rank(); },
                [](std::vector<int> ranks) {
                  std::string joined;
                  for (int r : ranks) joined += std::to_string(r) + ";";
                  return joined;
                }),
            [&] {
              std::string joined;
              for (int r : members) joined += std::to_string(r) + ";";
              return joined;
            }());

  // all_reduce with a ReduceOp: scalars, vectors, metrics, over the group only.
  int sum = 0, largest = 0;
  for (int r : members) sum += r, largest = std::max(largest, r);
  EXPECT_EQ(mpidist::all_reduce(g, rank()), sum);
  EXPECT_EQ(mpidist::all_reduce(g, std::vector<int>{rank(), 1}, ReduceOp::Max), (std::vector<int>{largest, 1}));
  const std::map<std::string, double> metrics{{"loss", 1.0 * rank()}, {"n", 1.0}};
  EXPECT_EQ(mpidist::all_reduce(g, metrics), (std::map<std::string, double>{{"loss", 1.0 * sum}, {"n", 1.0 * n}}));

  // all_reduce with a function, in the group's rank order.
  std::string in_order;
  for (int r : members) in_order += std::to_string(r) + ",";
  EXPECT_EQ(mpidist::all_reduce(g, std::to_string(rank()) + ",", std::plus<>{}), in_order);
  EXPECT_EQ(mpidist::all_reduce(g, rank(), [](int a, int b) { return std::max(a, b); }), largest);
}

// --- Tests --------------------------------------------------------------------------------------

TEST_F(ObjectsGroupsTest, EveryFunctionOnASplitOfTheWorld) {
  const Communicator parity = mpidist::world().split(rank() % 2, rank());
  std::vector<int> members;
  for (int r = rank() % 2; r < size(); r += 2) members.push_back(r);
  exercise_group(parity, members);
}

TEST_F(ObjectsGroupsTest, EveryFunctionOnNewGroupOfTheOddRanks) {
  if (size() == 1) return;  // no odd rank: every rank returns alike
  std::vector<int> odd;
  for (int r = 1; r < size(); r += 2) odd.push_back(r);
  const Communicator g = mpidist::new_group(std::span<const int>(odd));
  if (rank() % 2 == 0) {
    EXPECT_FALSE(g);  // the even ranks are outside: a null communicator
    return;
  }
  ASSERT_TRUE(g);
  exercise_group(g, odd);
}

TEST_F(ObjectsGroupsTest, BroadcastFromTheGroupsLastRank) {
  const Communicator g = mpidist::world().split(rank() % 2, rank());
  const int last = g.size() - 1;
  const int last_world_rank = rank() % 2 + 2 * last;
  const std::map<std::string, std::vector<float>> mine{{"w", std::vector<float>(3, static_cast<float>(rank()))}};
  const auto got = mpidist::broadcast(g, mine, last);
  EXPECT_EQ(got.at("w"), std::vector<float>(3, static_cast<float>(last_world_rank)));
  EXPECT_EQ(mpidist::broadcast(g, rank() * 1.5, last), last_world_rank * 1.5);
}

TEST_F(ObjectsGroupsTest, AllReduceWithAFunctionCombinesInRankOrder) {
  // A struct with operator+, through std::plus<> and through a lambda calling it.
  const Tally mine{1, std::to_string(rank())};
  std::string in_order;
  for (int r = 0; r < size(); ++r) in_order += std::to_string(r);
  EXPECT_EQ(mpidist::all_reduce(mine, std::plus<>{}), (Tally{size(), in_order}));
  EXPECT_EQ(mpidist::all_reduce(mine, [](const Tally& a, const Tally& b) { return a + b; }), (Tally{size(), in_order}));
  // std::plus<> on numbers, string concatenation (not commutative), a lambda max.
  EXPECT_EQ(mpidist::all_reduce(rank() + 1, std::plus<>{}), size() * (size() + 1) / 2);
  EXPECT_EQ(mpidist::all_reduce(std::to_string(rank()), std::plus<>{}), in_order);
  EXPECT_EQ(mpidist::all_reduce(3 * rank() % 4, [](int a, int b) { return std::max(a, b); }),
            [] {
              int m = 0;
              for (int r = 0; r < size(); ++r) m = std::max(m, 3 * r % 4);
              return m;
            }());
  // A trivially copyable value (sent as bytes) under a non-commutative product.
  Matrix expected = matrix_of(0);
  for (int r = 1; r < size(); ++r) expected = multiply(expected, matrix_of(r));
  EXPECT_EQ(mpidist::all_reduce(matrix_of(rank()), multiply), expected);
  if (size() > 1) {  // the reverse order would have given another matrix
    Matrix reversed = matrix_of(size() - 1);
    for (int r = size() - 2; r >= 0; --r) reversed = multiply(reversed, matrix_of(r));
    EXPECT_NE(expected, reversed);
  }
}

TEST_F(ObjectsGroupsTest, ReduceWithAnOpOrAFunctionOnALastRankRoot) {
  const int root = size() - 1;
  const bool here = rank() == root;
  auto expect_on_root = [&](const auto& result, const auto& expected) {
    if (here) {
      ASSERT_TRUE(result.has_value());
      EXPECT_EQ(*result, expected);
    } else {
      EXPECT_FALSE(result.has_value());
    }
  };
  std::int64_t sum = 0;
  for (int r = 0; r < size(); ++r) sum += (std::int64_t{1} << 60) / 8 + r;
  expect_on_root(mpidist::reduce((std::int64_t{1} << 60) / 8 + rank(), ReduceOp::Sum, root), sum);
  expect_on_root(mpidist::reduce(static_cast<std::int64_t>(-7 * (rank() == 0)), ReduceOp::Avg, root),
                 std::int64_t{-7 / size()});
  expect_on_root(mpidist::reduce(rank() + 2, ReduceOp::Min, root), 2);
  expect_on_root(mpidist::reduce(rank() == 0 ? 0.0 : 2.5, ReduceOp::And, root), 0.0);
  expect_on_root(mpidist::reduce(rank() == 0 ? 0.0 : 2.5, ReduceOp::Or, root), size() > 1 ? 1.0 : 0.0);
  expect_on_root(mpidist::reduce(rank() == root, ReduceOp::Or, root), true);
  expect_on_root(mpidist::reduce(rank() == root, ReduceOp::And, root), size() == 1);
  expect_on_root(mpidist::reduce(std::vector<double>{1.0, 1.0 * rank()}, ReduceOp::Max, root),
                 std::vector<double>{1.0, 1.0 * root});
  expect_on_root(mpidist::reduce(std::array<int, 2>{1, rank()}, ReduceOp::Sum, root),
                 std::array<int, 2>{size(), size() * (size() - 1) / 2});
  expect_on_root(mpidist::reduce(std::vector<bool>{true, rank() == 0}, ReduceOp::And, root),
                 std::vector<bool>{true, size() == 1});
  expect_on_root(mpidist::reduce(std::map<std::string, double>{{"loss", 2.0}}, ReduceOp::Avg, root),
                 std::map<std::string, double>{{"loss", 2.0}});
  // Solo: And/Or map the value to its truth, as all_reduce does.
  {
    mpidist::MainProcessContext alone;  // every rank is the root of its group of one
    EXPECT_EQ(mpidist::reduce(5, ReduceOp::Or, 0), std::optional<int>(1));
    EXPECT_EQ(mpidist::reduce(0.0, ReduceOp::And, 0), std::optional<double>(0.0));
  }
  // Lengths and keys must match on every rank, else Error on every rank.
  if (size() > 1) {
    expect_error([&] { (void)mpidist::reduce(std::vector<int>(static_cast<std::size_t>(2 + rank())), ReduceOp::Sum, root); },
                 "world", "lengths differ");
    expect_error(
        [&] { (void)mpidist::reduce(std::map<std::string, double>{{rank() == 0 ? "a" : "b", 1.0}}, ReduceOp::Sum, root); },
        "world", "metric keys differ");
  }
  // With a function: rank order, on root only.
  std::string in_order;
  for (int r = 0; r < size(); ++r) in_order += "<" + std::to_string(r) + ">";
  expect_on_root(mpidist::reduce("<" + std::to_string(rank()) + ">", std::plus<>{}, root), in_order);
  Matrix product = matrix_of(0);
  for (int r = 1; r < size(); ++r) product = multiply(product, matrix_of(r));
  expect_on_root(mpidist::reduce(matrix_of(rank()), multiply, root), product);
  int calls = 0;
  (void)mpidist::reduce(rank(), [&](int a, int b) { ++calls; return a + b; }, root);
  EXPECT_EQ(calls, here ? size() - 1 : 0);  // fn runs on root only, once per other rank
}

TEST_F(ObjectsGroupsTest, AnExceptionInTheFunctionIsAnErrorOnEveryRank) {
  auto refuse = [](const std::string&, const std::string&) -> std::string { throw std::runtime_error("no merge"); };
  if (size() == 1) {
    // Alone, fn is never called: the reduction of one value is that value.
    EXPECT_EQ(mpidist::all_reduce(std::string("x"), refuse), "x");
    EXPECT_EQ(mpidist::reduce(std::string("x"), refuse, 0), "x");
    return;
  }
  expect_error([&] { (void)mpidist::all_reduce(std::string("x"), refuse); }, "world", "rank 0 failed: no merge");
  const int root = size() - 1;
  expect_error([&] { (void)mpidist::reduce(std::string("x"), refuse, root); }, "world",
               "rank " + std::to_string(root) + " failed: no merge");
  // A trivially copyable T takes the fixed-size path; the failure still reaches every rank.
  auto refuse_int = [](int, int) -> int { throw std::runtime_error("int merge"); };
  expect_error([&] { (void)mpidist::all_reduce(rank(), refuse_int); }, "world", "rank 0 failed: int merge");
  expect_error([&] { (void)mpidist::reduce(rank(), refuse_int, root); }, "world",
               "rank " + std::to_string(root) + " failed: int merge");
  // In a group: the group's rank 0 (and the group's root) folds; the Error names the group.
  const Communicator g = mpidist::world().split(rank() % 2, rank());
  if (g.size() > 1) {
    expect_error([&] { (void)mpidist::all_reduce(g, std::string("x"), refuse); }, g.name(), "rank 0 failed: no merge");
    expect_error([&] { (void)mpidist::reduce(g, rank(), refuse_int, 1); }, g.name(), "rank 1 failed: int merge");
  }
  // The group still works afterwards.
  EXPECT_EQ(mpidist::all_reduce(g, 1), g.size());
}

TEST_F(ObjectsGroupsTest, ANullCommunicatorIsAnError) {
  const Communicator null;
  auto fails = [](auto&& call) { EXPECT_THROW(call(), mpidist::Error); };
  fails([&] { (void)mpidist::broadcast(null, 1); });
  fails([&] { (void)mpidist::broadcast(null, std::string("moved")); });
  const std::string kept = "kept";
  fails([&] { (void)mpidist::broadcast(null, kept, 0); });
  fails([&] { (void)mpidist::all_gather(null, 1); });
  fails([&] { (void)mpidist::gather(null, 1, 0); });
  fails([&] { (void)mpidist::scatter(null, std::vector<int>{1}, 0); });
  fails([&] { (void)mpidist::compute_and_broadcast(null, [] { return 1; }); });
  fails([&] { (void)mpidist::gather_from_all_ranks(null, [] { return 1; }); });
  fails([&] { (void)mpidist::gather_scalar_from_all_ranks(null, [] { return 1.0; }); });
  fails([&] { (void)mpidist::reduce_and_broadcast(null, [] { return 1; }, [](std::vector<int> v) { return v[0]; }); });
  fails([&] { (void)mpidist::all_reduce(null, 1); });
  fails([&] { (void)mpidist::all_reduce(null, std::string("a"), std::plus<>{}); });
  fails([&] { (void)mpidist::reduce(null, 1, ReduceOp::Sum); });
  fails([&] { (void)mpidist::reduce(null, std::string("a"), std::plus<>{}); });
  try {
    (void)mpidist::all_gather(null, 1);
  } catch (const mpidist::Error& e) {
    EXPECT_NE(e.detail().find("null Communicator"), std::string::npos) << e.what();
  }
}

TEST_F(ObjectsGroupsTest, ErrorsNameTheGroup) {
  const Communicator g = mpidist::world().split(rank() % 2, rank());
  EXPECT_EQ(g.name(), "world/split(color " + std::to_string(rank() % 2) + ")");
  // A root inside the world but outside the group.
  const int outside = g.size();
  const std::string range = "root rank " + std::to_string(outside) + " out of range for group size";
  expect_error([&] { (void)mpidist::broadcast(g, 1, outside); }, g.name(), range);
  expect_error([&] { (void)mpidist::gather(g, std::string("s"), outside); }, g.name(), range);
  expect_error([&] { (void)mpidist::reduce(g, 1, ReduceOp::Sum, outside); }, g.name(), range);
  expect_error([&] { (void)mpidist::reduce(g, 1, std::plus<>{}, outside); }, g.name(), range);
  expect_error([&] { (void)mpidist::compute_and_broadcast(g, [] { return 1; }, -1); }, g.name(),
               "root rank -1 out of range");
  // Failures found by the transport and the reductions name the group too.
  expect_error([&] { (void)mpidist::scatter(g, std::vector<int>(static_cast<std::size_t>(g.size() + 1)), 0); },
               g.name(), "values for group size " + std::to_string(g.size()));
  expect_error([&] { (void)mpidist::compute_and_broadcast(g, []() -> int { throw std::runtime_error("bad"); }); },
               g.name(), "rank 0 failed: bad");
  if (g.size() > 1)
    expect_error([&] { (void)mpidist::all_reduce(g, std::vector<int>(static_cast<std::size_t>(1 + g.rank()))); },
                 g.name(), "lengths differ");
  // The world forms name the world.
  expect_error([&] { (void)mpidist::broadcast(1, size()); }, "world", "out of range for world size");
}

TEST_F(ObjectsGroupsTest, TensorOverloadsStillWinAtRunTime) {
  const Communicator g = mpidist::world().split(rank() % 2, rank());
  std::vector<float> v(4, 1.0f);
  mpidist::all_reduce(g, std::span(v));  // tensor, in place, over the group
  EXPECT_EQ(v, std::vector<float>(4, static_cast<float>(g.size())));
  std::vector<float> w(3, static_cast<float>(g.rank()));
  mpidist::broadcast(g, std::span(w), g.size() - 1);
  EXPECT_EQ(w, std::vector<float>(3, static_cast<float>(g.size() - 1)));
  std::vector<float> x(2, static_cast<float>(rank()));
  mpidist::all_reduce(std::span(x), ReduceOp::Avg);  // world tensor
  EXPECT_FLOAT_EQ(x[0], static_cast<float>(size() - 1) / 2.0f);
  // The same names with objects return values.
  EXPECT_EQ(mpidist::all_reduce(g, std::vector<float>(2, 1.0f)), std::vector<float>(2, static_cast<float>(g.size())));
  EXPECT_EQ(mpidist::broadcast(g, g.rank() + 10, g.size() - 1), g.size() + 9);
}

TEST_F(ObjectsGroupsTest, InsideAMainProcessContextEveryGroupCallIsLocal) {
  const Communicator g = mpidist::world().split(rank() % 2, rank());
  mpidist::MainProcessContext alone;
  EXPECT_EQ(mpidist::all_reduce(g, std::string("me"), std::plus<>{}), "me");
  EXPECT_EQ(mpidist::all_reduce(g, 5, ReduceOp::And), 1);
  EXPECT_EQ(mpidist::reduce(g, 7, ReduceOp::Sum, 0), std::optional<int>(7));
  EXPECT_EQ(mpidist::all_gather(g, rank()), std::vector<int>{rank()});
}

}  // namespace
