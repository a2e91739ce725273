// The device path's contract (issue 22), under the strict device emulation: device collectives
// without a stream are ordered after the caller's default-stream work; overlapping in/out that is
// not an exact in-place layout is an Error on every path; split() groups make no NCCL
// communicator until their first device collective, and a child's failure leaves the parent
// whole; a process uses its own device only (MPIDIST_EMU_MAX_CONTEXTS=1 in the runs that allow
// one context); managed memory belongs to this rank's device. Host runs check the overlap only.
#include <dlfcn.h>
#include <sys/mman.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"
#include "tensor_buffers.hpp"

#if MPIDIST_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using mpidist_test::expect_error;
using mpidist_test::on_device;

class DeviceContract : public mpidist_test::MpiTest {};

// An emulation hook (tests/device_emulation), or null against the real libraries.
template <class F>
F* emu_hook(const char* name) {
  return reinterpret_cast<F*>(dlsym(RTLD_DEFAULT, name));
}

bool nccl_backend() {
  const char* backend = std::getenv("MPIDIST_BACKEND");
  return backend != nullptr && std::string(backend) == "nccl";
}

// ---- Overlap: host and device ----

TEST_F(DeviceContract, OverlapThatIsNotAnInPlaceLayoutIsAnErrorNamingBothRanges) {
  const int n = mpidist::world_size(), me = mpidist::rank();
  mpidist_test::TestBuffer<float> buffer(std::vector<float>(static_cast<std::size_t>(4 * n + 4), 1.0f));
  float* base = buffer.data();
  // out starts one element into in: every rank's mistake, every rank's Error.
  expect_error([&] { mpidist::all_reduce({base, 4, mpidist::DataType::Float32}, {base + 1, 4, mpidist::DataType::Float32}); },
               {"all_reduce", "overlap", "in [", "out [", "not the in-place layout (in == out"});
  // all_gather with in == out: exact only on rank 0 (out + 0 x size); the others fail, and so
  // every rank gets the Error.
  if (n > 1)
    expect_error([&] { mpidist::all_gather({base, 2, mpidist::DataType::Float32}, {base, 2 * static_cast<std::size_t>(n), mpidist::DataType::Float32}); },
                 {"all_gather", "overlap"});
  // The exact layouts are in place, and work.
  mpidist::all_gather({base + 2 * me, 2, mpidist::DataType::Float32}, {base, 2 * static_cast<std::size_t>(n), mpidist::DataType::Float32});
  mpidist::reduce_scatter({base, 2 * static_cast<std::size_t>(n), mpidist::DataType::Float32}, {base + 2 * me, 2, mpidist::DataType::Float32});
  const auto values = buffer.read();
  EXPECT_EQ(values[static_cast<std::size_t>(2 * me)], static_cast<float>(n)) << "reduce_scatter of ones in place";
}

#if MPIDIST_TEST_HAVE_CUDA

// ---- Ordering after the legacy default stream ----

enum class Write { PageableCopy, MemsetOnDefaultStream };
enum class Kind { AllReduce, Broadcast, AllGather, ReduceScatter, Reduce };

// One collective whose input was written on the default stream just before the call, with no
// synchronization: a pageable cudaMemcpy (lands later) or cudaMemsetAsync(..., 0) on stream 0 (a
// stand-in for a kernel). Without a stream the library orders itself after that work; with a
// blocking stream of the caller's, CUDA's legacy semantics do.
void check_ordered(Kind kind, Write write, bool with_stream) {
  const int n = mpidist::world_size(), me = mpidist::rank();
  const std::size_t count = 8, in_count = kind == Kind::ReduceScatter ? count * static_cast<std::size_t>(n) : count;
  const std::size_t out_count = kind == Kind::AllGather ? count * static_cast<std::size_t>(n) : count;
  mpidist_test::TestBuffer<float> in(std::vector<float>(in_count, -7.0f)), out(std::vector<float>(out_count, -7.0f));
  const float mine = write == Write::PageableCopy ? static_cast<float>(me + 1) : 0.0f;
  if (write == Write::PageableCopy) {
    const std::vector<float> fresh(in_count, mine);  // pageable: the copy returns before its DMA lands
    mpidist_test::cuda_ok(cudaMemcpy(in.data(), fresh.data(), in.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  } else {
    mpidist_test::cuda_ok(cudaMemsetAsync(in.data(), 0, in.bytes(), nullptr), "cudaMemsetAsync");
  }
  cudaStream_t stream = nullptr;
  if (with_stream) mpidist_test::cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");  // blocking
  const auto f32 = mpidist::DataType::Float32;
  const mpidist::BufferView in_view(in.data(), in_count, f32), out_view(out.data(), out_count, f32);
  float sum = 0;
  for (int r = 0; r < n; ++r) sum += write == Write::PageableCopy ? static_cast<float>(r + 1) : 0.0f;
  std::vector<float> expected(out_count, sum);
  switch (kind) {
    case Kind::AllReduce: mpidist::all_reduce(in_view, out_view, mpidist::ReduceOp::Sum, stream); break;
    case Kind::Broadcast:
      mpidist::broadcast(in_view, 0, stream);
      expected.assign(out_count, write == Write::PageableCopy ? 1.0f : 0.0f);
      break;
    case Kind::AllGather:
      mpidist::all_gather(in_view, out_view, stream);
      for (std::size_t i = 0; i < out_count; ++i)
        expected[i] = write == Write::PageableCopy ? static_cast<float>(i / count + 1) : 0.0f;
      break;
    case Kind::ReduceScatter: mpidist::reduce_scatter(in_view, out_view, mpidist::ReduceOp::Sum, stream); break;
    case Kind::Reduce: mpidist::reduce(in_view, out_view, mpidist::ReduceOp::Sum, 0, stream); break;
  }
  if (stream != nullptr) mpidist_test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (kind == Kind::Broadcast) {
    EXPECT_EQ(in.read(), expected);
  } else if (kind != Kind::Reduce || me == 0) {
    EXPECT_EQ(out.read(), expected);
  }
  if (stream != nullptr) cudaStreamDestroy(stream);
}

TEST_F(DeviceContract, EveryCollectiveIsOrderedAfterDefaultStreamWrites) {
  if (!on_device()) GTEST_SKIP() << "device memory only";
  for (Kind kind : {Kind::AllReduce, Kind::Broadcast, Kind::AllGather, Kind::ReduceScatter, Kind::Reduce})
    for (Write write : {Write::PageableCopy, Write::MemsetOnDefaultStream})
      for (bool with_stream : {false, true}) {
        SCOPED_TRACE("collective " + std::to_string(static_cast<int>(kind)) + ", write " +
                     std::to_string(static_cast<int>(write)) + (with_stream ? ", blocking stream" : ", no stream"));
        check_ordered(kind, write, with_stream);
      }
}

// What the ordering costs on a small call (one float): the call without a stream (ordering, the
// collective, the wait) against the two ordering calls alone. Under the emulation these are host
// costs of the emulation, not of a GPU: the print is for the README's honest account.
TEST_F(DeviceContract, OrderingCostOnASmallCall) {
  if (!on_device()) GTEST_SKIP() << "device memory only";
  mpidist_test::TestBuffer<float> x(std::vector<float>(1, 1.0f));
  constexpr int calls = 300;
  mpidist::all_reduce(x.view());  // the NCCL communicator is made outside the timing
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) mpidist::all_reduce(x.view());
  const double call_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls;
  cudaEvent_t event = nullptr;
  cudaStream_t stream = nullptr;
  mpidist_test::cuda_ok(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  mpidist_test::cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    cudaEventRecord(event, cudaStreamLegacy);
    cudaStreamWaitEvent(stream, event, 0);
  }
  const double order_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls;
  mpidist_test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaStreamDestroy(stream);
  cudaEventDestroy(event);
  if (mpidist::rank() == 0)
    std::printf("[ measured ] %d ranks: all_reduce of 1 float without a stream %.1f us/call; the ordering's "
                "cudaEventRecord + cudaStreamWaitEvent %.2f us/call\n", mpidist::world_size(), call_us, order_us);
}

// ---- Lazy NCCL per group ----

TEST_F(DeviceContract, SplitGroupsThatNeverTouchDeviceMemoryCreateNoNcclCommunicator) {
  auto* made = emu_hook<int()>("mpidist_emu_nccl_communicators");
  if (!on_device() || !nccl_backend() || made == nullptr) GTEST_SKIP() << "NCCL under the emulation only";
  mpidist_test::TestBuffer<float> x(std::vector<float>(4, 1.0f));
  mpidist::all_reduce(x.view());  // the world's communicator exists from here
  const int before = made();
  const auto world = mpidist::world();
  const auto halves = world.split(mpidist::rank() % 2);
  const auto pairs = mpidist::new_subgroups(1);
  std::vector<float> host(4, 1.0f);
  mpidist::all_reduce(halves, {host.data(), host.size(), mpidist::DataType::Float32});
  EXPECT_EQ(made(), before) << "host collectives on split groups made an NCCL communicator";
  mpidist::all_reduce(halves, x.view());
  EXPECT_EQ(made(), before + 1) << "the first device collective of a group makes its communicator";
  (void)pairs;
}

// ---- Devices ----

// A pointer query on a thread that never called cudaSetDevice would make a context on device 0;
// mpidist makes this rank's device current first. The run allows one context (MPIDIST_EMU_MAX_CONTEXTS=1).
TEST_F(DeviceContract, PointerChecksOnAFreshThreadUseThisRanksDevice) {
  auto* contexts = emu_hook<int()>("mpidist_emu_contexts");
  if (!on_device() || contexts == nullptr) GTEST_SKIP() << "under the emulation only";
  const int mine = mpidist::device().index;
  mpidist_test::TestBuffer<float> x(std::vector<float>(4, 1.0f));
  int seen = -2;
  std::vector<float> host(4);
  bool host_is_host = false;
  std::thread fresh([&] {
    seen = mpidist::BufferView(x.data(), 4, mpidist::DataType::Float32).device();
    host_is_host = mpidist::BufferView(host.data(), 4, mpidist::DataType::Float32).memory() == mpidist::MemoryKind::Host;
  });
  fresh.join();
  EXPECT_EQ(seen, mine);
  EXPECT_TRUE(host_is_host);
  EXPECT_EQ(contexts(), 1) << "this process uses one device only";
}

// Runs without the one-context limit (its own meson test): the wrong ways that make a second one.
TEST_F(DeviceContract, TwoContexts_ManagedMemoryBelongsToThisRanksDevice) {
  if (!on_device() || mpidist::device().index == 0) GTEST_SKIP() << "device memory, on a rank whose device is not 0";
  float* managed = nullptr;
  std::thread fresh([&] {  // device 0 current: the allocation reports device 0
    mpidist_test::cuda_ok(cudaMallocManaged(reinterpret_cast<void**>(&managed), 4 * sizeof(float), cudaMemAttachGlobal),
                          "cudaMallocManaged");
  });
  fresh.join();
  for (int i = 0; i < 4; ++i) managed[i] = 1.0f;  // managed memory is host-accessible
  const mpidist::BufferView view(managed, 4, mpidist::DataType::Float32);
  EXPECT_EQ(view.memory(), mpidist::MemoryKind::Device);
  EXPECT_EQ(view.device(), mpidist::device().index);
  cudaFree(managed);
}

// A stream of another device is accepted by NCCL's call and fails at launch; the group breaks,
// its parent (the world) does not.
TEST_F(DeviceContract, TwoContexts_AStreamOfAnotherDeviceFailsAtLaunchAndBreaksOnlyItsGroup) {
  if (!on_device() || !nccl_backend()) GTEST_SKIP() << "NCCL only";
  int count = 0;
  cudaGetDeviceCount(&count);
  // With one GPU the "other" device is this rank's own, and the call rightly succeeds.
  if (count < 2) GTEST_SKIP() << "needs a second GPU on the host (it has " << count << ")";
  const auto child = mpidist::world().split(0);
  mpidist_test::TestBuffer<float> x(std::vector<float>(4, 1.0f));
  const int mine = mpidist::device().index, other = (mine + 1) % count;
  cudaStream_t foreign = nullptr;
  mpidist_test::cuda_ok(cudaSetDevice(other), "cudaSetDevice");
  mpidist_test::cuda_ok(cudaStreamCreateWithFlags(&foreign, cudaStreamNonBlocking), "cudaStreamCreate");
  mpidist_test::cuda_ok(cudaSetDevice(mine), "cudaSetDevice");
  // The launching rank aborts the child's NCCL communicator; a peer learns of it in the collective
  // or, when it is still polling the communicator's initialization, there ("rank 0 aborted the
  // communicator"): either way an Error that says so.
  expect_error([&] { mpidist::all_reduce(child, x.view(), mpidist::ReduceOp::Sum, foreign); }, {"NCCL", "aborted"});
  expect_error([&] { mpidist::all_reduce(child, x.view()); }, {"can no longer be used"});
  mpidist::all_reduce(x.view());
  EXPECT_EQ(x.read(), std::vector<float>(4, static_cast<float>(mpidist::world_size())));
  cudaStreamDestroy(foreign);
}

// Run with MPIDIST_EMU_NCCL_FAIL_ENQUEUE=1 (rank 1's first NCCL operation fails to enqueue): the
// rank aborts the child's communicator and breaks the child; its peers learn of the abort from
// NCCL's asynchronous error at once, not at the timeout; the world is untouched.
TEST_F(DeviceContract, FailedEnqueue_AbortsTheChildOnlyAndEveryRankLearnsPromptly) {
  if (!on_device() || !nccl_backend() || mpidist::world_size() < 2) GTEST_SKIP() << "NCCL, 2+ ranks";
  const auto child = mpidist::world().split(0);
  mpidist_test::TestBuffer<float> x(std::vector<float>(4, 1.0f));
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { mpidist::all_reduce(child, x.view()); }, {"all_reduce", "aborted"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0) << "the peers waited for the timeout instead of NCCL's asynchronous error";
  expect_error([&] { mpidist::all_reduce(child, x.view()); }, {"can no longer be used"});
  mpidist_test::TestBuffer<float> y(std::vector<float>(4, 1.0f));
  mpidist::all_reduce(y.view());
  EXPECT_EQ(y.read(), std::vector<float>(4, static_cast<float>(mpidist::world_size())));
}

// Run alone with MPIDIST_EMU_UNAVAILABLE_DEVICE set to this rank's device (collectives-device-jobs):
// no context can be made there, so the pointer check cannot tell host from device memory. Memory
// of unknown kind, mapped on its own (where a driver maps device memory too), is then an Error.
// Buffers on the stack or in the brk heap need no check (core/host_memory.hpp): they still work.
TEST_F(DeviceContract, DISABLED_APointerCheckThatCannotRunIsAnError) {
  constexpr std::size_t bytes = std::size_t{1} << 20;
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  expect_error([&] { mpidist::BufferView(mapped, 4, mpidist::DataType::Float32); }, {"busy or unavailable"});
  munmap(mapped, bytes);
  std::array<float, 4> on_stack{};
  EXPECT_EQ(mpidist::BufferView(std::span<float>(on_stack)).memory(), mpidist::MemoryKind::Host);
}

#endif  // MPIDIST_TEST_HAVE_CUDA

}  // namespace
