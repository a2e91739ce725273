// The emulated NCCL's communicator life cycle: initialization checks (blocking and non-blocking),
// groups, abort.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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
  // Non-blocking: the process with the bad config fails at once; the others learn it as their
  // asynchronous error, and their failed communicators can only be aborted, as in NCCL.
  ncclConfig_t config = emu_test::nonblocking_config();
  if (mpidist::rank() == 1) config.magic = 0;
  const ncclResult_t started =
      ncclCommInitRankConfig(&comm, mpidist::world_size(), emu_test::shared_id(), mpidist::rank(), &config);
  if (mpidist::rank() == 1) {
    EXPECT_EQ(started, ncclInvalidArgument);
  } else {
    ASSERT_EQ(started, ncclInProgress);
    EXPECT_EQ(emu_test::settle(comm), ncclInvalidArgument);
    // NCCL 2.28: destroy returns from inside its own group, which stays open; the abort after it
    // is swallowed until an ncclGroupEnd closes the group.
    EXPECT_EQ(ncclCommDestroy(comm), ncclInvalidArgument) << "a failed initialization only aborts";
    EXPECT_TRUE(contains(mpidist_emu_last_diagnostic(), "without closing it"));
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_TRUE(contains(mpidist_emu_last_diagnostic(), "swallowed"));
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << "closing the group runs the queued abort";
  }
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "NCCL_CONFIG_INITIALIZER")) << ncclGetLastError(nullptr);
  config.magic = 0xcafebeef;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, mpidist::world_size(), emu_test::shared_id(), mpidist::rank(), &config),
            ncclInProgress);
  EXPECT_EQ(emu_test::settle(comm), ncclSuccess);
  // Non-blocking, as in NCCL: the finalize completes in the background, seen by polling.
  EXPECT_EQ(ncclCommFinalize(comm), ncclInProgress);
  EXPECT_EQ(emu_test::settle(comm), ncclSuccess);
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

// Non-blocking init (config.blocking = 0), as NCCL defines it: a handle at once, ncclInProgress
// until every rank joined, and every call but ncclCommGetAsyncError and ncclCommAbort refused
// until then. Rank 0 joins only after the others have seen that.
TEST_F(EmuNcclInit, NonBlockingInitIsInProgressUntilEveryRankJoined) {
  if (mpidist::world_size() < 2) GTEST_SKIP();
  const int n = mpidist::world_size();
  cudaSetDevice(mpidist::rank());
  const ncclUniqueId id = emu_test::shared_id();
  float* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&buffer), 4 * sizeof(float)), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  constexpr int kJoinTag = 77;
  if (mpidist::rank() == 0) {
    for (int r = 1; r < n; ++r) MPI_Recv(nullptr, 0, MPI_BYTE, r, kJoinTag, mpidist::communicator(), MPI_STATUS_IGNORE);
  }
  ncclConfig_t config = emu_test::nonblocking_config();
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, n, id, mpidist::rank(), &config), ncclInProgress);
  ASSERT_NE(comm, nullptr) << "the handle exists at once";
  if (mpidist::rank() != 0) {
    for (int poll = 0; poll < 20; ++poll) {
      ncclResult_t state = ncclSuccess;
      EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
      EXPECT_EQ(state, ncclInProgress) << "rank 0 has not joined yet";
    }
    EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "Attempt to use communicator before the previous operation "
                                                    "returned ncclSuccess")) << ncclGetLastError(nullptr);
    int count = 0;
    EXPECT_EQ(ncclCommCount(comm, &count), ncclInvalidArgument);
    EXPECT_EQ(ncclCommDestroy(comm), ncclInvalidArgument) << "only ncclCommAbort may end an initializing communicator";
    MPI_Send(nullptr, 0, MPI_BYTE, 0, kJoinTag, mpidist::communicator());
  }
  ASSERT_EQ(emu_test::settle(comm), ncclSuccess);
  int count = 0;
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(count, n);

  // A collective is launched "later": until ncclCommGetAsyncError says so, its work is not on the
  // stream (which therefore looks idle) and a second call is refused.
  const std::vector<float> ones(4, 1.0f);
  ASSERT_EQ(cudaMemcpy(buffer, ones.data(), sizeof(float) * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);  // a pageable copy lands later
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, s), ncclInProgress);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess) << "not launched yet: the stream is empty";
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, s), ncclInvalidArgument);
  EXPECT_EQ(emu_test::settle(comm), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // The same through a group: the operations return ncclSuccess, ncclGroupEnd ncclInProgress.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, s), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInProgress);
  EXPECT_EQ(emu_test::settle(comm), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::vector<float> out(4);
  ASSERT_EQ(cudaMemcpy(out.data(), buffer, sizeof(float) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[3], static_cast<float>(n * n));

  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(cudaFree(buffer), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// One rank never joins: the others abort their initializations (what mpidist does at its
// timeout), and a later communicator over every rank still works, the late rank included.
TEST_F(EmuNcclInit, AbortEndsAnInitializationThatNeverCompletes) {
  if (mpidist::world_size() < 2) GTEST_SKIP();
  cudaSetDevice(mpidist::rank());
  const ncclUniqueId id = emu_test::shared_id();
  if (mpidist::rank() != 0) {
    ncclConfig_t config = emu_test::nonblocking_config();
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRankConfig(&comm, mpidist::world_size(), id, mpidist::rank(), &config), ncclInProgress);
    for (int poll = 0; poll < 50; ++poll) {
      ncclResult_t state = ncclSuccess;
      EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
      EXPECT_EQ(state, ncclInProgress);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    int count = 0;
    EXPECT_EQ(ncclCommCount(comm, &count), ncclInvalidUsage);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "aborted"));
  }
  // Whole-world exchanges match by order over MPI_COMM_WORLD (README, Limits): rank 0 starts its
  // next one only after the others gave up theirs.
  MPI_Barrier(mpidist::communicator());
  ncclComm_t fresh = emu_test::make_comm();
  ASSERT_NE(fresh, nullptr) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(fresh), ncclSuccess);
}

// The same for a communicator smaller than the world (members meet at a rendezvous): the member
// that aborts takes its record back, so the id's rendezvous is not left behind.
TEST_F(EmuNcclInit, AbortWithdrawsFromASmallerCommunicatorsRendezvous) {
  const int n = mpidist::world_size();
  if (n < 3) GTEST_SKIP() << "needs a communicator of 2 or more below the world size";
  cudaSetDevice(mpidist::rank());
  const ncclUniqueId id = emu_test::shared_id();
  if (mpidist::rank() == 1) {  // of the n - 1 members, only this one arrives
    ncclConfig_t config = emu_test::nonblocking_config();
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRankConfig(&comm, n - 1, id, 0, &config), ncclInProgress);
    ncclResult_t state = ncclSuccess;
    for (int poll = 0; poll < 20; ++poll) EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    EXPECT_EQ(state, ncclInProgress);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    if (std::getenv("MPIDIST_EMU_RENDEZVOUS_DIR") == nullptr && access("/dev/shm", W_OK) == 0) {
      std::string token;
      char digits[3];
      for (int i = 16; i < 32; ++i) {
        std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(id.internal[i]));
        token += digits;
      }
      EXPECT_NE(access(("/dev/shm/mpidist-emu-nccl-" + token).c_str(), F_OK), 0) << "the rendezvous was left behind";
    }
  }
  MPI_Barrier(mpidist::communicator());
  // Every member of a new communicator of n - 1 (ranks 1..n-1) arrives: it completes.
  const ncclUniqueId fresh = emu_test::shared_id();
  if (mpidist::rank() > 0) {
    ncclConfig_t config = emu_test::nonblocking_config();
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRankConfig(&comm, n - 1, fresh, mpidist::rank() - 1, &config), ncclInProgress);
    EXPECT_EQ(emu_test::settle(comm), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  }
  MPI_Barrier(mpidist::communicator());
}

}  // namespace
