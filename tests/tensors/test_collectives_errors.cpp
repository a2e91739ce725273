// Tensor collectives that must fail, and fail the same way on every rank: mismatched shapes,
// invalid roots, logical reductions; plus element types and backend reporting.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

namespace {

using namespace mpidist_test;
using mpidist::ReduceOp;
using CollectiveErrors = MpiTest;
using ElementTypes = MpiTest;

int me() { return mpidist::rank(); }
int size() { return mpidist::world_size(); }

TEST_F(CollectiveErrors, MismatchedCountsAcrossRanksFailEverywhere) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  TestBuffer<float> buffer(std::vector<float>(me() == 1 ? 5 : 4, 1.0f));
  expect_error([&] { mpidist::all_reduce(buffer.view()); }, {"all_reduce", "element count", "rank 0 has 4", "rank 1 has 5"});
  // The communicator is still usable afterwards.
  TestBuffer<float> fine(std::vector<float>(4, 1.0f));
  mpidist::all_reduce(fine.view());
  EXPECT_EQ(fine.read()[0], static_cast<float>(size()));
}

TEST_F(CollectiveErrors, MismatchedTypesAndCollectivesAcrossRanks) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  TestBuffer<float> f(std::vector<float>(4, 1.0f));
  TestBuffer<std::int32_t> i(std::vector<std::int32_t>(4, 1));
  expect_error([&] { mpidist::all_reduce(me() == 0 ? i.view() : f.view()); }, {"element type", "rank 0 has int32"});
  expect_error([&] { mpidist::all_reduce(f.view(), me() == 0 ? ReduceOp::Max : ReduceOp::Sum); },
               {"reduction", "rank 0 has max", "rank 1 has sum"});
  expect_error([&] {
    if (me() == 0) mpidist::broadcast(f.view(), 0);
    else mpidist::all_reduce(f.view());
  }, {"collective", "rank 0 has broadcast"});
}

TEST_F(CollectiveErrors, BadOutputOnOneRankFailsEveryRank) {
  const int bad = size() - 1;
  TestBuffer<double> in(std::vector<double>(6, 1.0));
  TestBuffer<double> out(std::vector<double>(me() == bad ? 5 : 6, 0.0));
  // With several ranks, the others learn which rank failed and why.
  const std::string who = size() > 1 ? "rank " + std::to_string(bad) + " failed" : "all_reduce";
  expect_error([&] { mpidist::all_reduce(in.view(), out.view()); }, {"all_reduce", who, "out has 5 elements but must have 6"});
  TestBuffer<double> gathered(std::vector<double>(6, 0.0));
  if (size() > 1) expect_error([&] { mpidist::all_gather(in.view(), gathered.view()); }, {"all_gather", "world size x in's count"});
  TestBuffer<std::int32_t> ints(std::vector<std::int32_t>(6, 0));
  expect_error([&] { mpidist::all_reduce(in.view(), ints.view()); }, {"element type float64 but out has int32"});
  TestBuffer<double> odd(std::vector<double>(static_cast<std::size_t>(size()) * 2 + 1, 1.0));
  TestBuffer<double> block(std::vector<double>(2, 0.0));
  if (size() > 1) expect_error([&] { mpidist::reduce_scatter(odd.view(), block.view()); }, {"not a multiple of the world size"});
}

// A bad list on one rank, for all_gather and reduce_scatter: on host memory each rank checks its own
// list, and the failure joins the call's agreement as a bad buffer does (MPIDIST_VALIDATE=1); on
// device memory the ranks' layout agreement carries it. Either way every rank raises it, blocking
// or through the Work, and the ranks go on in step.
TEST_F(CollectiveErrors, BadListOnOneRankFailsEveryRank) {
  const int bad = size() - 1;
  const auto N = static_cast<std::size_t>(size());
  const std::string who = size() > 1 ? "rank " + std::to_string(bad) : "";
  TestBuffer<float> in(std::vector<float>(3, static_cast<float>(me() + 1)));
  std::vector<std::unique_ptr<TestBuffer<float>>> held;
  std::vector<mpidist::BufferView> outs;
  for (std::size_t r = 0; r < N + (me() == bad ? 1 : 0); ++r) {
    held.push_back(std::make_unique<TestBuffer<float>>(std::vector<float>(me() == bad && r == 0 ? 2 : 3)));
    outs.push_back(held.back()->view());  // the bad rank's: one too many, the first one element short
  }
  expect_error([&] { mpidist::all_gather(in.view(), outs); },
               {"all_gather", who, "the list holds " + std::to_string(N + 1) + " tensors"});
  mpidist::Work started = mpidist::all_gather_async(in.view(), outs);
  expect_error([&] { started.wait(); }, {"all_gather", who, "the list holds"});
  const std::span<const mpidist::BufferView> parts(outs.data(), N);
  expect_error([&] { mpidist::reduce_scatter(parts, in.view()); },
               {"reduce_scatter", who, me() == bad || size() > 1 ? "tensor 0 of the list holds 2" : ""});
  if (me() == bad) held[0] = std::make_unique<TestBuffer<float>>(std::vector<float>(3)), outs[0] = held[0]->view();
  mpidist::all_gather(in.view(), std::span<const mpidist::BufferView>(outs.data(), N));
  for (std::size_t r = 0; r < N; ++r) EXPECT_EQ(held[r]->read()[2], static_cast<float>(r + 1));
}

TEST_F(CollectiveErrors, InvalidRootIsAnErrorOnEveryRank) {
  TestBuffer<float> buffer(std::vector<float>(3, 1.0f));
  expect_error([&] { mpidist::broadcast(buffer.view(), size()); },
               {"broadcast", "root " + std::to_string(size()) + " out of range for world size " + std::to_string(size())});
  expect_error([&] { mpidist::reduce(buffer.view(), buffer.view(), ReduceOp::Sum, -1); }, {"reduce", "root -1 out of range"});
  if (size() > 1)
    expect_error([&] { mpidist::broadcast(buffer.view(), me() == 0 ? 1 : 0); }, {"root", "rank 0 has 1", "rank 1 has 0"});
}

TEST_F(CollectiveErrors, LogicalReductionsAreRejected) {
  TestBuffer<std::int32_t> flags(std::vector<std::int32_t>(2, 1));
  expect_error([&] { mpidist::all_reduce(flags.view(), ReduceOp::And); }, {"all_reduce", "'and' applies to object reductions only", "min a logical and"});
  expect_error([&] { mpidist::reduce_scatter(flags.view(), flags.view(), ReduceOp::Or); }, {"'or'"});
}

TEST_F(CollectiveErrors, AverageOfDictionariesWithDifferentKeys) {
  if (size() == 1) GTEST_SKIP() << "needs two ranks";
  std::vector<float> a(2, 1.0f), b(2, 1.0f);
  std::map<std::string, mpidist::BufferView> metrics{{"loss", std::span(a)}};
  if (me() == 1) metrics.emplace("extra", std::span(b));
  expect_error([&] { mpidist::average(metrics); }, {"average", "different keys", "rank 1: extra loss"});
}

TEST_F(CollectiveErrors, BackendsAreReported) {
  const auto names = mpidist::available_backends();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "mpi");
  const auto chosen = mpidist::backend();
  EXPECT_NE(std::find(names.begin(), names.end(), chosen), names.end()) << chosen;
  // MPIDIST_BACKEND is read once, at initialization (test_settings covers its values).
  if (const char* forced = std::getenv("MPIDIST_BACKEND"); forced != nullptr && std::string(forced) == "mpi") {
    EXPECT_NE(chosen, "nccl");
  }
  EXPECT_EQ(mpidist::to_string(mpidist::Backend::CudaAwareMpi), "cuda-aware-mpi");
  const auto where = mpidist::device();
  EXPECT_EQ(where.is_cuda, mpidist::device().is_cuda);
  EXPECT_GE(mpidist::gpu_mem_usage(), 0.0);
  if (!on_device()) {
    std::vector<float> host(3);
    EXPECT_EQ(mpidist::BufferView(std::span(host)).memory(), mpidist::MemoryKind::Host);
  }
}

#if MPIDIST_TEST_HAVE_CUDA
// NCCL needs buffers on the communicator's device; a buffer elsewhere fails every rank up front.
TEST_F(CollectiveErrors, BufferOnAnotherDeviceFailsEveryRank) {
  if (!on_device() || mpidist::backend() != "nccl") GTEST_SKIP() << "NCCL device runs only";
  int count = 0;
  cuda_ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (count < 2) GTEST_SKIP() << "needs two devices";
  const int mine = mpidist::device().index;
  const int other = (mine + 1) % count;
  void* elsewhere = nullptr;
  cuda_ok(cudaSetDevice(other), "cudaSetDevice");
  cuda_ok(cudaMalloc(&elsewhere, 64), "cudaMalloc");
  cuda_ok(cudaSetDevice(mine), "cudaSetDevice");
  const mpidist::BufferView view(elsewhere, 16, mpidist::DataType::Float32);
  expect_error([&] { mpidist::all_reduce(view); },
               {"all_reduce", "buffers are on cuda:" + std::to_string(size() == 1 ? other : 1 % count)});
  cudaFree(elsewhere);
}
#endif

TEST_F(ElementTypes, HalfConversionsRoundToNearestEven) {
  using mpidist::bfloat16;
  using mpidist::float16;
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);  // rounds up to infinity
  EXPECT_EQ(float16(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_EQ(float16(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie rounds to even (zero)
  EXPECT_EQ(float16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);  // tie to even
  EXPECT_EQ(float16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::numeric_limits<float>::quiet_NaN()))));
  for (std::uint32_t b = 0; b < 0x7c00; ++b)  // every finite half survives a round trip
    ASSERT_EQ(float16(static_cast<float>(float16::from_bits(static_cast<std::uint16_t>(b)))).bits, b);
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(bfloat16(3.0f)), 3.0f);
  EXPECT_EQ(bfloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);  // tie to even
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_F(ElementTypes, NamesAndSizes) {
  EXPECT_EQ(mpidist::to_string(mpidist::DataType::BFloat16), "bfloat16");
  EXPECT_EQ(mpidist::dtype_from_string("half"), mpidist::DataType::Float16);
  EXPECT_EQ(mpidist::dtype_from_string("int64"), mpidist::DataType::Int64);
  EXPECT_THROW(mpidist::dtype_from_string("complex"), mpidist::Error);
  EXPECT_EQ(mpidist::size_of(mpidist::DataType::Float64), 8u);
  EXPECT_EQ(mpidist::dtype_v<const std::uint8_t>, mpidist::DataType::UInt8);
  std::vector<std::int64_t> values(7);
  const mpidist::BufferView view{std::span(values)};
  EXPECT_EQ(view.bytes(), 56u);
  EXPECT_THROW(mpidist::BufferView(nullptr, 3, mpidist::DataType::Int8), mpidist::Error);
}

TEST_F(ElementTypes, ByteSizeOverflowIsAnErrorAtConstruction) {
  // SIZE_MAX float32 elements would be 4 * SIZE_MAX bytes: bytes() would wrap, MPI would crash.
  float one = 0;
  const std::size_t huge = SIZE_MAX;
  mpidist_test::expect_error([&] { (void)mpidist::BufferView(&one, huge, mpidist::DataType::Float32); },
                             {"BufferView", std::to_string(huge), "float32", "overflow"});
  mpidist_test::expect_error([&] { (void)mpidist::BufferView(&one, SIZE_MAX / 8 + 1, mpidist::DataType::Float64); },
                             {std::to_string(SIZE_MAX / 8 + 1), "float64"});
  // The largest count that fits is accepted (a view is not an allocation).
  const std::size_t largest = static_cast<std::size_t>(PTRDIFF_MAX) / 2;
  EXPECT_EQ(mpidist::BufferView(&one, largest, mpidist::DataType::Float16).bytes(), largest * 2);
}

}  // namespace
