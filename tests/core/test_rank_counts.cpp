// RankCounts (lib/core/rank_counts.hpp) alone, without MPI: the uneven collectives' per-rank counts,
// held in the object up to 8 ranks and on the heap past that. The MPI suites run at most 5 ranks,
// so the heap side and the moves between the two are checked here.
#include <gtest/gtest.h>

#include <numeric>
#include <utility>
#include <vector>

#include "core/rank_counts.hpp"

namespace {

using mpidist::detail::RankCounts;

std::vector<std::size_t> values(const RankCounts& c) { return {c.begin(), c.end()}; }

std::vector<std::size_t> iota(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), 100);
  return v;
}

TEST(RankCounts, HoldsEveryRanksValueInlineAndOnTheHeap) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{9}, std::size_t{300}}) {
    const RankCounts filled(n, 7);
    EXPECT_EQ(values(filled), std::vector<std::size_t>(n, 7)) << n;
    const auto expected = iota(n);
    RankCounts copied(expected.begin(), expected.end());
    EXPECT_EQ(copied.size(), n);
    EXPECT_EQ(copied.empty(), n == 0);
    EXPECT_EQ(values(copied), expected) << n;
    if (n > 0) {
      copied[n - 1] = 1;
      EXPECT_EQ(copied.data()[n - 1], 1u);
    }
  }
}

TEST(RankCounts, CopiesAndMovesKeepTheValuesWhateverTheSizes) {
  for (const std::size_t from : {std::size_t{3}, std::size_t{12}})
    for (const std::size_t to : {std::size_t{5}, std::size_t{20}}) {
      const auto a = iota(from);
      RankCounts source(a.begin(), a.end());
      RankCounts target(to, 1);
      target = source;  // copy
      EXPECT_EQ(values(target), a) << from << " onto " << to;
      RankCounts moved(std::move(target));
      EXPECT_EQ(values(moved), a);
      EXPECT_TRUE(target.empty());
      RankCounts again(to, 2);
      again = std::move(moved);
      EXPECT_EQ(values(again), a);
      again.assign(to, 3);  // reuse after a move, in either storage
      EXPECT_EQ(values(again), std::vector<std::size_t>(to, 3));
      again = again;  // self-assignment keeps the values
      EXPECT_EQ(values(again), std::vector<std::size_t>(to, 3));
    }
}

}  // namespace
