// all_reduce_many on the buffers of the tensor suites: host memory, or (MPIDIST_TEST_DEVICE=1)
// device memory, where the calls go to NCCL between one ncclGroupStart/End (the emulation checks
// that every rank issues the same operations in the same order). Results must equal separate
// all_reduce calls on the same inputs.
#include <cstdint>
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

}  // namespace
