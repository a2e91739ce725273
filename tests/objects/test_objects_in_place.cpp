// The in-place forms of the object collectives (a non-const std::vector or std::array of numbers,
// as torch.distributed takes a tensor) at 1-4 ranks: all_reduce, reduce and broadcast write their
// argument, with the comm-first forms too; const and temporary arguments keep the value form.
#include <array>
#include <utility>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace {

using ObjectsInPlaceTest = mpidist_test::MpiTest;
using mpidist::ReduceOp;

int rank() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }
double mean_rank() { return (size() - 1) / 2.0; }

// The line a torch user writes first: it must change `grad`, never silently nothing.
TEST_F(ObjectsInPlaceTest, AllReduceOfANonConstVectorReducesInPlace) {
  std::vector<double> grad(5, static_cast<double>(rank()));
  mpidist::all_reduce(grad, ReduceOp::Avg);
  for (double g : grad) EXPECT_DOUBLE_EQ(g, mean_rank());
  std::array<int, 3> counts{rank(), 1, 2};
  mpidist::all_reduce(mpidist::world(), counts);
  EXPECT_EQ(counts, (std::array<int, 3>{size() * (size() - 1) / 2, size(), 2 * size()}));
  std::vector<int> flags{rank() == 0 ? 1 : 0};
  mpidist::all_reduce(flags, ReduceOp::Or);  // the object semantics: logical And/Or too
  EXPECT_EQ(flags, std::vector<int>{1});
}

TEST_F(ObjectsInPlaceTest, ConstAndTemporaryArgumentsKeepTheValueForm) {
  const std::vector<double> mine(3, static_cast<double>(rank()));
  const auto sum = mpidist::all_reduce(mine);
  EXPECT_EQ(mine, std::vector<double>(3, static_cast<double>(rank())));  // unchanged
  EXPECT_DOUBLE_EQ(sum[0], size() * mean_rank());
  std::vector<double> kept(3, 1.0);
  const auto copy = mpidist::all_reduce(std::as_const(kept), ReduceOp::Sum);
  EXPECT_EQ(kept, std::vector<double>(3, 1.0));
  EXPECT_EQ(copy, std::vector<double>(3, static_cast<double>(size())));
  EXPECT_EQ(mpidist::all_reduce(std::vector<int>{1, 2}), (std::vector<int>{size(), 2 * size()}));
}

TEST_F(ObjectsInPlaceTest, ReduceInPlaceWritesRootOnly) {
  for (int root : {0, size() - 1}) {
    std::vector<long> v{rank() + 1L, 10L};
    mpidist::reduce(v, ReduceOp::Sum, root);
    if (rank() == root || size() == 1)
      EXPECT_EQ(v, (std::vector<long>{size() * (size() + 1L) / 2, 10L * size()})) << "root " << root;
    else
      EXPECT_EQ(v, (std::vector<long>{rank() + 1L, 10L})) << "root " << root;  // the others' v as it was
    std::array<float, 2> a{static_cast<float>(rank()), 1.0f};
    mpidist::reduce(mpidist::world(), a, ReduceOp::Avg, root);
    if (rank() == root || size() == 1) EXPECT_FLOAT_EQ(a[0], static_cast<float>(mean_rank()));
    else EXPECT_FLOAT_EQ(a[0], static_cast<float>(rank()));
  }
}

TEST_F(ObjectsInPlaceTest, BroadcastInPlaceTakesRootsValueAndLength) {
  const int root = size() - 1;
  std::vector<float> weights(rank() == root ? 4 : 1, static_cast<float>(rank()));
  mpidist::broadcast(weights, root);
  EXPECT_EQ(weights, std::vector<float>(4, static_cast<float>(root)));
  std::array<int, 2> step{rank(), -rank()};
  mpidist::broadcast(mpidist::world(), step);
  EXPECT_EQ(step, (std::array<int, 2>{0, 0}));
}

}  // namespace
