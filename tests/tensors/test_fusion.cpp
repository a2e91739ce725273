// all_reduce_many on the buffers of the tensor suites: host memory, or (MPIDIST_TEST_DEVICE=1)
// device memory, where the calls go to NCCL between one ncclGroupStart/End (the emulation checks
// that every rank issues the same operations in the same order). Results must equal separate
// all_reduce calls on the same inputs.
#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

namespace {

using namespace mpidist_test;
using mpidist::ReduceOp;
using Fusion = MpiTest;

template <class T>
std::vector<T> pattern(std::size_t n, int salt) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>((i * 3 + static_cast<std::size_t>(mpidist::rank() * 7 + salt)) % 23);
  return v;
}

TEST_F(Fusion, MixedTypesAndEmptyBuffersMatchSeparateCalls) {
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg}) {
    TestBuffer<float> a(pattern<float>(1000, 1)), a_ref(pattern<float>(1000, 1));
    TestBuffer<std::int32_t> b(pattern<std::int32_t>(0, 2)), b_ref(pattern<std::int32_t>(0, 2));
    TestBuffer<double> c(pattern<double>(33, 3)), c_ref(pattern<double>(33, 3));
    TestBuffer<std::int32_t> d(pattern<std::int32_t>(70000, 4)), d_ref(pattern<std::int32_t>(70000, 4));
    TestBuffer<float> e(pattern<float>(5, 5)), e_ref(pattern<float>(5, 5));
    const std::vector<mpidist::BufferView> views{a.view(), b.view(), c.view(), d.view(), e.view()};
    mpidist::all_reduce_many(views, op);
    for (auto* ref : {&a_ref, &e_ref}) mpidist::all_reduce(ref->view(), op);
    mpidist::all_reduce(c_ref.view(), op);
    mpidist::all_reduce(d_ref.view(), op);
    // Values up to 22 x 4 ranks: sums and averages of these floats are exact in any order.
    EXPECT_EQ(a.read(), a_ref.read());
    EXPECT_EQ(c.read(), c_ref.read());
    EXPECT_EQ(d.read(), d_ref.read());
    EXPECT_EQ(e.read(), e_ref.read());
  }
}

TEST_F(Fusion, OnASplitCommunicator) {
  const mpidist::Communicator half = mpidist::world().split(mpidist::rank() % 2);
  TestBuffer<float> a(std::vector<float>(300, 1.0f));
  TestBuffer<std::int64_t> b(std::vector<std::int64_t>(7, 2));
  const std::vector<mpidist::BufferView> views{a.view(), b.view()};
  mpidist::all_reduce_many(half, views);
  for (const float v : a.read()) ASSERT_EQ(v, static_cast<float>(half.size()));
  for (const std::int64_t v : b.read()) ASSERT_EQ(v, 2 * half.size());
}

// The tensors as users hold them: a vector of vectors, a vector of spans, a braced list of spans
// of mixed types, a list of arrays; the non-blocking form on an lvalue list; average of a map of
// vectors and of arrays. Each as separate all_reduce calls would leave it.
TEST_F(Fusion, TensorsAsTheyAreHeld) {
  const mpidist::Communicator world = mpidist::world();
  const int n = world.size(), me = world.rank();
  const float ranks = static_cast<float>(n * (n - 1) / 2);
  std::vector<std::vector<float>> layers{std::vector<float>(300, static_cast<float>(me)), {}, std::vector<float>(7, 1.0f)};
  mpidist::all_reduce_many(layers);
  EXPECT_EQ(layers[0], std::vector<float>(300, ranks));
  EXPECT_TRUE(layers[1].empty());
  EXPECT_EQ(layers[2], std::vector<float>(7, static_cast<float>(n)));

  std::vector<double> w(5, 2.0), b(2, static_cast<double>(me));
  std::vector<std::span<double>> spans{w, b};
  mpidist::all_reduce_many(world, spans, ReduceOp::Max);
  EXPECT_EQ(w, std::vector<double>(5, 2.0));
  EXPECT_EQ(b, std::vector<double>(2, n - 1.0));

  std::vector<std::int64_t> steps(3, 1);
  std::vector<float> loss(1, 1.0f);
  mpidist::all_reduce_many({std::span(steps), std::span(loss)});
  EXPECT_EQ(steps, std::vector<std::int64_t>(3, n));
  EXPECT_EQ(loss, std::vector<float>(1, static_cast<float>(n)));

  std::vector<std::array<std::int32_t, 2>> pairs{{me, 1}, {2, me}};
  mpidist::Work work = mpidist::all_reduce_many_async(world, pairs, ReduceOp::Sum);
  work.wait();
  EXPECT_EQ(pairs[0], (std::array<std::int32_t, 2>{static_cast<std::int32_t>(ranks), n}));
  EXPECT_EQ(pairs[1], (std::array<std::int32_t, 2>{2 * n, static_cast<std::int32_t>(ranks)}));

  std::map<std::string, std::vector<float>> metrics{{"loss", {static_cast<float>(me), 1.0f}}, {"acc", {2.0f}}};
  mpidist::average(metrics);
  EXPECT_EQ(metrics["loss"], (std::vector<float>{ranks / static_cast<float>(n), 1.0f}));
  EXPECT_EQ(metrics["acc"], std::vector<float>{2.0f});
  std::map<std::string, std::array<double, 2>> fixed{{"x", {static_cast<double>(me), 4.0}}};
  mpidist::average(world, fixed);
  EXPECT_EQ(fixed["x"], (std::array<double, 2>{(n - 1) / 2.0, 4.0}));
}

}  // namespace
