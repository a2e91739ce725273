// The emulated NCCL's communicator life cycle: initialization checks, groups, abort.
#include <thread>
#include <vector>

#include "emu.hpp"
#include "mpi_test.hpp"
#include "nccl_test_util.hpp"

namespace {

using EmuNcclInit = mpidist_test::MpiTest;
using emu_test::contains;

TEST_F(EmuNcclInit, InitQueriesAndDestroy) {
  ncclComm_t comm = emu_test::make_comm();
  ASSERT_NE(comm, nullptr) << ncclGetLastError(nullptr);
  int count = 0, rank = -1, device = -1;
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
  EXPECT_EQ(count, mpidist::world_size());
  EXPECT_EQ(rank, mpidist::rank());
  EXPECT_EQ(device, mpidist::rank());
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(ncclCommCount(comm, &count), ncclInvalidUsage) << "use after destroy";
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "destroyed"));
}

TEST_F(EmuNcclInit, RanksMayBePermuted) {
  cudaSetDevice(mpidist::rank());
  const int reversed = mpidist::world_size() - 1 - mpidist::rank();
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, mpidist::world_size(), emu_test::shared_id(), reversed), ncclSuccess);
  int rank = -1;
  EXPECT_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT_EQ(rank, reversed);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(EmuNcclInit, MismatchedIdsFailEverywhere) {
  cudaSetDevice(mpidist::rank());
  ncclUniqueId own{};
  ASSERT_EQ(ncclGetUniqueId(&own), ncclSuccess);  // every rank its own: the broadcast was forgotten
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, mpidist::world_size(), own, mpidist::rank()), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "disagree on the unique id")) << ncclGetLastError(nullptr);
  EXPECT_EQ(comm, nullptr);
  ncclUniqueId zero{};
  EXPECT_EQ(ncclCommInitRank(&comm, mpidist::world_size(), zero, mpidist::rank()), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "did not produce"));
}

TEST_F(EmuNcclInit, MismatchedSizesAndRanksFailEverywhere) {
  cudaSetDevice(mpidist::rank());
  const int n = mpidist::world_size();
  ncclComm_t comm = nullptr;
  const int nranks = mpidist::rank() == 0 ? n + 1 : n;
  EXPECT_EQ(ncclCommInitRank(&comm, nranks, emu_test::shared_id(), mpidist::rank()), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "passed nranks")) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommInitRank(&comm, n, emu_test::shared_id(), 0), ncclInvalidArgument) << "every rank says 0";
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "both passed rank 0")) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommInitRank(&comm, n, emu_test::shared_id(), mpidist::rank() + n), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "outside")) << ncclGetLastError(nullptr);
}

TEST_F(EmuNcclInit, ALocalMistakeFailsEveryRankInsteadOfHanging) {
  cudaSetDevice(mpidist::rank());
  ncclComm_t comm = nullptr;
  ncclComm_t* out = mpidist::rank() == 0 ? nullptr : &comm;
  EXPECT_EQ(ncclCommInitRank(out, mpidist::world_size(), emu_test::shared_id(), mpidist::rank()), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "process 0 passed a null comm pointer")) << ncclGetLastError(nullptr);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  if (mpidist::rank() == 1) config.magic = 0;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, mpidist::world_size(), emu_test::shared_id(), mpidist::rank(), &config),
            ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "NCCL_CONFIG_INITIALIZER")) << ncclGetLastError(nullptr);
  config.magic = 0xcafebeef;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, mpidist::world_size(), emu_test::shared_id(), mpidist::rank(), &config),
            ncclSuccess);
  ncclResult_t state = ncclInProgress;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess) << "a non-blocking init may complete at once";
  EXPECT_EQ(ncclCommFinalize(comm), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(EmuNcclInit, TwoRanksOnOneDeviceAreRejected) {
  cudaSetDevice(0);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, mpidist::world_size(), emu_test::shared_id(), mpidist::rank()), ncclInvalidUsage);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "Duplicate GPU detected")) << ncclGetLastError(nullptr);
}

TEST_F(EmuNcclInit, GroupNestingIsChecked) {
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "no matching ncclGroupStart"));
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

// The production timeout path: one rank never joins, the others see cudaErrorNotReady, give up
// and abort; nothing hangs, the dead communicator is refused, and a new one works.
TEST_F(EmuNcclInit, AbortAfterAMissingPeerDoesNotHang) {
  if (mpidist::world_size() < 2) GTEST_SKIP();
  ncclComm_t comm = emu_test::make_comm();
  ASSERT_NE(comm, nullptr);
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 4 * sizeof(float)), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  if (mpidist::rank() != 0) {
    ASSERT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, s), ncclSuccess);
    for (int poll = 0; poll < 50; ++poll) {
      EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess) << "aborted work is dropped";
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, s), ncclInvalidUsage);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "aborted"));
  EXPECT_EQ(cudaFree(buffer), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);

  ncclComm_t fresh = emu_test::make_comm();
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(ncclCommDestroy(fresh), ncclSuccess);
}

}  // namespace
