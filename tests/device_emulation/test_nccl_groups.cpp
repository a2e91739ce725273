// Several live NCCL communicators at once: subsets made by ncclCommInitRank on their members only,
// ncclCommSplit, operations of different communicators interleaved on shared streams.
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "emu.hpp"
#include "mpi_test.hpp"
#include "nccl_test_util.hpp"

namespace {

using EmuNcclGroups = mpidist_test::MpiTest;
using emu_test::contains;

/// The world ranks with this rank's parity, ascending.
std::vector<int> parity_group() {
  std::vector<int> members;
  for (int r = mpidist::rank() % 2; r < mpidist::world_size(); r += 2) members.push_back(r);
  return members;
}

int index_of(const std::vector<int>& members, int world_rank) {
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == world_rank) return static_cast<int>(i);
  }
  return -1;
}

/// An id made by the first member and sent to the others point-to-point: non-members take no part.
ncclUniqueId id_for(const std::vector<int>& members) {
  ncclUniqueId id{};
  const MPI_Comm world = mpidist::communicator();
  if (mpidist::rank() == members[0]) {
    ncclGetUniqueId(&id);
    for (std::size_t i = 1; i < members.size(); ++i) MPI_Send(&id, sizeof id, MPI_BYTE, members[i], 77, world);
  } else {
    MPI_Recv(&id, sizeof id, MPI_BYTE, members[0], 77, world, MPI_STATUS_IGNORE);
  }
  return id;
}

/// Device memory holding `values` (at least one byte).
template <typename T>
T* upload(const std::vector<T>& values) {
  void* p = nullptr;
  cudaMalloc(&p, values.size() * sizeof(T) + 1);
  cudaMemcpy(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaStreamSynchronize(cudaStreamLegacy);  // a pageable copy lands later
  return static_cast<T*>(p);
}

template <typename T>
T download_one(const T* device) {
  T value{};
  cudaMemcpy(&value, device, sizeof value, cudaMemcpyDeviceToHost);
  return value;
}

int sum_of(const std::vector<int>& values) {
  int sum = 0;
  for (int v : values) sum += v;
  return sum;
}

// The world and a communicator per parity ({0,2} and {1,3} at 4 ranks), each group's NCCL ranks
// in reverse world order, all on the process's one device; the two parities issue their
// operations in different cross-communicator orders, on one stream plus a second one.
TEST_F(EmuNcclGroups, OverlappingCommunicatorsInterleaved) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  ncclComm_t world = emu_test::make_comm();  // device = rank, shared by both communicators
  ASSERT_NE(world, nullptr) << ncclGetLastError(nullptr);
  const std::vector<int> members = parity_group();
  const int group_size = static_cast<int>(members.size());
  const int group_rank = group_size - 1 - index_of(members, me);
  ncclComm_t group = nullptr;
  ASSERT_EQ(ncclCommInitRank(&group, group_size, id_for(members), group_rank), ncclSuccess) << ncclGetLastError(nullptr);
  int count = 0, rank = -1, device = -1;
  EXPECT_EQ(ncclCommCount(group, &count), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(group, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(group, &device), ncclSuccess);
  EXPECT_EQ(count, group_size);
  EXPECT_EQ(rank, group_rank);
  EXPECT_EQ(device, me);

  cudaStream_t s = nullptr, other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  int* world_sum = upload(std::vector<int>{me + 1});
  int* world_bcast = upload(std::vector<int>{me == n - 1 ? 500 : -1});
  int* group_sum = upload(std::vector<int>{me});
  int* group_bcast = upload(std::vector<int>{1000 + me});
  int* group_sum2 = upload(std::vector<int>{10 * me});
  const auto world_ops = [&] {
    ASSERT_EQ(ncclAllReduce(world_sum, world_sum, 1, ncclInt32, ncclSum, world, s), ncclSuccess);
    ASSERT_EQ(ncclBroadcast(world_bcast, world_bcast, 1, ncclInt32, n - 1, world, s), ncclSuccess);
  };
  const auto group_ops = [&] {
    ASSERT_EQ(ncclBroadcast(group_bcast, group_bcast, 1, ncclInt32, 0, group, s), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(group_sum, group_sum, 1, ncclInt32, ncclSum, group, s), ncclSuccess);
    // Last of its communicator: `s` is driven first and must not wait for this stream's turn.
    ASSERT_EQ(ncclAllReduce(group_sum2, group_sum2, 1, ncclInt32, ncclSum, group, other), ncclSuccess);
  };
  if (me % 2 == 0) {
    world_ops();
    group_ops();
  } else {
    group_ops();
    world_ops();
  }
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(download_one(world_sum), n * (n + 1) / 2);
  EXPECT_EQ(download_one(world_bcast), 500);
  EXPECT_EQ(download_one(group_sum), sum_of(members));
  EXPECT_EQ(download_one(group_sum2), 10 * sum_of(members));
  EXPECT_EQ(download_one(group_bcast), 1000 + members.back()) << "group rank 0 is the last member";

  for (int* p : {world_sum, world_bcast, group_sum, group_bcast, group_sum2}) EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
  EXPECT_EQ(ncclCommDestroy(group), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(world), ncclSuccess);
}

// Split by rank % 2 (key reversing the order) and by rank / 2, issued while an operation of the
// parent is still queued: the split must not match it.
TEST_F(EmuNcclGroups, SplitByParityAndByHalves) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  ncclComm_t world = emu_test::make_comm();
  ASSERT_NE(world, nullptr);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int* pending = upload(std::vector<int>{1});
  ASSERT_EQ(ncclAllReduce(pending, pending, 1, ncclInt32, ncclSum, world, s), ncclSuccess);

  ncclComm_t parity = nullptr, half = nullptr;
  ASSERT_EQ(ncclCommSplit(world, me % 2, -me, &parity, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ASSERT_EQ(ncclCommSplit(world, me / 2, 0, &half, &config), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_NE(parity, nullptr);
  ASSERT_NE(half, nullptr);
  const std::vector<int> members = parity_group();
  int count = 0, rank = -1, device = -1;
  EXPECT_EQ(ncclCommCount(parity, &count), ncclSuccess);
  EXPECT_EQ(count, static_cast<int>(members.size()));
  EXPECT_EQ(ncclCommUserRank(parity, &rank), ncclSuccess);
  EXPECT_EQ(rank, static_cast<int>(members.size()) - 1 - index_of(members, me)) << "ordered by key";
  EXPECT_EQ(ncclCommCuDevice(parity, &device), ncclSuccess);
  EXPECT_EQ(device, me) << "the parent's device";
  EXPECT_EQ(ncclCommCount(half, &count), ncclSuccess);
  EXPECT_EQ(count, me / 2 * 2 + 1 < n ? 2 : 1);
  EXPECT_EQ(ncclCommUserRank(half, &rank), ncclSuccess);
  EXPECT_EQ(rank, me % 2) << "equal keys: ordered by parent rank";

  int* parity_sum = upload(std::vector<int>{me});
  int* half_sum = upload(std::vector<int>{me});
  ASSERT_EQ(ncclAllReduce(parity_sum, parity_sum, 1, ncclInt32, ncclSum, parity, s), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(half_sum, half_sum, 1, ncclInt32, ncclSum, half, s), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(download_one(pending), n);
  EXPECT_EQ(download_one(parity_sum), sum_of(members));
  EXPECT_EQ(download_one(half_sum), me / 2 * 2 + 1 < n ? 4 * (me / 2) + 1 : me);

  for (int* p : {pending, parity_sum, half_sum}) EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(ncclCommDestroy(parity), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(half), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(world), ncclSuccess);
}

TEST_F(EmuNcclGroups, SplitNoColorAndBadColors) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  ncclComm_t world = emu_test::make_comm();
  ASSERT_NE(world, nullptr);
  static int not_a_comm = 0;
  ncclComm_t rest = reinterpret_cast<ncclComm_t>(&not_a_comm);  // must be overwritten, also with NULL
  ASSERT_EQ(ncclCommSplit(world, me == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &rest, nullptr), ncclSuccess);
  if (me == 0) {
    EXPECT_EQ(rest, nullptr);
  } else {
    ASSERT_NE(rest, nullptr);
    int count = 0, rank = -1;
    EXPECT_EQ(ncclCommCount(rest, &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(rest, &rank), ncclSuccess);
    EXPECT_EQ(count, n - 1);
    EXPECT_EQ(rank, me - 1);
    int* sum = upload(std::vector<int>{me});
    ASSERT_EQ(ncclAllReduce(sum, sum, 1, ncclInt32, ncclSum, rest, nullptr), ncclSuccess);
    EXPECT_EQ(download_one(sum), n * (n - 1) / 2) << "the legacy stream's copy waits for the collective";
    EXPECT_EQ(cudaFree(sum), cudaSuccess);
    EXPECT_EQ(ncclCommDestroy(rest), ncclSuccess);
  }
  ncclComm_t bad = nullptr;
  EXPECT_EQ(ncclCommSplit(world, me == n - 1 ? -5 : 0, 0, &bad, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "rank " + std::to_string(n - 1) + " passed a negative color"))
      << ncclGetLastError(nullptr);
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(ncclCommSplit(world, 0, 0, me == 0 ? nullptr : &bad, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "rank 0 passed a null newcomm")) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(world), ncclSuccess);
}

// Members {0, 1} of a world of at least 4 (so that a wrong nranks is still below the world size):
// every member fails with the same text, nobody hangs, and ranks 2 and 3 never take part.
TEST_F(EmuNcclGroups, SubsetMistakesFailEveryMember) {
  const int me = mpidist::rank();
  if (mpidist::world_size() < 4) GTEST_SKIP() << "needs 4 ranks";
  if (me < 2) {
    cudaSetDevice(me);
    const std::vector<int> members{0, 1};
    ncclComm_t comm = nullptr;
    EXPECT_EQ(ncclCommInitRank(&comm, me == 1 ? 3 : 2, id_for(members), me), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "process 1 passed nranks 3 but 2 processes joined with this id"))
        << ncclGetLastError(nullptr);
    EXPECT_EQ(ncclCommInitRank(&comm, 2, id_for(members), 0), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "processes 0 and 1 both passed rank 0")) << ncclGetLastError(nullptr);
    cudaSetDevice(0);
    EXPECT_EQ(ncclCommInitRank(&comm, 2, id_for(members), me), ncclInvalidUsage);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "Duplicate GPU detected")) << ncclGetLastError(nullptr);
    cudaSetDevice(me);
    EXPECT_EQ(ncclCommInitRank(&comm, 2, ncclUniqueId{}, me), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "did not produce")) << ncclGetLastError(nullptr);
    EXPECT_EQ(comm, nullptr);
  }
  MPI_Barrier(mpidist::communicator());
}

// {0, 1} create and use a communicator while the other ranks do something else entirely.
TEST_F(EmuNcclGroups, SubsetInitWhileOthersDoSomethingElse) {
  const int me = mpidist::rank(), n = mpidist::world_size();
  if (me < 2) {
    cudaSetDevice(me);
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id_for({0, 1}), 1 - me), ncclSuccess) << ncclGetLastError(nullptr);
    int* value = upload(std::vector<int>{me + 1});
    ASSERT_EQ(ncclAllReduce(value, value, 1, ncclInt32, ncclMax, comm, nullptr), ncclSuccess);
    EXPECT_EQ(download_one(value), 2);
    EXPECT_EQ(cudaFree(value), cudaSuccess);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  } else {
    // Host MPI among themselves, then a pause longer than the members' init.
    int token = me, received = -1;
    const int partner = me % 2 == 0 ? (me + 1 < n ? me + 1 : me) : me - 1;
    MPI_Sendrecv(&token, 1, MPI_INT, partner, 5, &received, 1, MPI_INT, partner, 5, mpidist::communicator(),
                 MPI_STATUS_IGNORE);
    EXPECT_EQ(received, partner);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  MPI_Barrier(mpidist::communicator());
}

}  // namespace

namespace {

// Run as a job of its own (collectives-device-jobs, MPIDIST_EMU_HANG_SECONDS=3): the world's
// ranks issue the work of two communicators in different orders, each on its own stream. A GPU
// may run one NCCL kernel at a time and deadlock; the emulation does, then reports which launch
// holds the others back and aborts.
TEST_F(EmuNcclGroups, DISABLED_TwoCommunicatorsInDifferentOrdersDeadlock) {
  const int me = mpidist::rank();
  ncclComm_t first = emu_test::make_comm(), second = emu_test::make_comm();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  int* x = upload(std::vector<int>{1});
  int* y = upload(std::vector<int>{2});
  const auto on_first = [&] { ASSERT_EQ(ncclAllReduce(x, x, 1, ncclInt32, ncclSum, first, a), ncclSuccess); };
  const auto on_second = [&] { ASSERT_EQ(ncclAllReduce(y, y, 1, ncclInt32, ncclSum, second, b), ncclSuccess); };
  if (me % 2 == 0) {
    on_first();
    on_second();
  } else {
    on_second();
    on_first();
  }
  cudaStreamSynchronize(me % 2 == 0 ? b : a);  // never returns: the emulation aborts
  ADD_FAILURE() << "the different orders did not deadlock";
}

}  // namespace
