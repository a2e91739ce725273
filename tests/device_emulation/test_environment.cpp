// The emulation's environment variables (see README.md). Each test applies only when the meson
// test that runs it sets its variable, and is skipped otherwise.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emu.hpp"
#include "mpi_test.hpp"
#include "nccl_test_util.hpp"

namespace {

using EmuEnvironment = mpidist_test::MpiTest;
using emu_test::contains;

bool env_is(const char* name, const char* value) {
  const char* text = std::getenv(name);
  return text != nullptr && std::strcmp(text, value) == 0;
}

std::string uuid_of(int device) {
  cudaDeviceProp p{};
  EXPECT_EQ(cudaGetDeviceProperties(&p, device), cudaSuccess);
  return std::string(p.uuid.bytes, sizeof p.uuid.bytes);
}

// Whether this rank's device-0 UUID equals rank 0's.
bool same_uuid_as_rank0(int device) {
  std::string mine = uuid_of(device);
  std::string root = mine;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_CHAR, 0, mpidist::communicator());
  return mine == root;
}

TEST_F(EmuEnvironment, DeviceCount) {
  const char* text = std::getenv("MPIDIST_EMU_DEVICE_COUNT");
  if (text == nullptr) GTEST_SKIP() << "MPIDIST_EMU_DEVICE_COUNT not set";
  int count = -1;
  EXPECT_EQ(cudaGetDeviceCount(&count), std::atoi(text) == 0 ? cudaErrorNoDevice : cudaSuccess);
  EXPECT_EQ(count, std::atoi(text));
  cudaGetLastError();
}

TEST_F(EmuEnvironment, SameUuidMakesEveryDeviceLookShared) {
  if (!env_is("MPIDIST_EMU_SAME_UUID", "1")) GTEST_SKIP() << "MPIDIST_EMU_SAME_UUID=1 not set";
  EXPECT_EQ(uuid_of(0), uuid_of(1));
  ncclComm_t comm = emu_test::make_comm();  // distinct devices, one UUID: a duplicate for NCCL too
  EXPECT_EQ(comm, nullptr);
  EXPECT_TRUE(contains(ncclGetLastError(nullptr), "Duplicate GPU detected")) << ncclGetLastError(nullptr);
}

TEST_F(EmuEnvironment, SimulatedNodesOwnTheirDevices) {
  if (!env_is("MPIDIST_RANKS_PER_NODE", "1")) GTEST_SKIP() << "MPIDIST_RANKS_PER_NODE=1 not set";
  EXPECT_EQ(same_uuid_as_rank0(0), mpidist::rank() == 0) << "device 0 of each simulated node is its own GPU";
  cudaSetDevice(0);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, mpidist::world_size(), emu_test::shared_id(), mpidist::rank()), ncclSuccess)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(EmuEnvironment, SharedDeviceAllowed) {
  if (!env_is("MPIDIST_EMU_ALLOW_SHARED_DEVICE", "1")) GTEST_SKIP() << "MPIDIST_EMU_ALLOW_SHARED_DEVICE=1 not set";
  EXPECT_TRUE(same_uuid_as_rank0(0));
  cudaSetDevice(0);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, mpidist::world_size(), emu_test::shared_id(), mpidist::rank()), ncclSuccess)
      << ncclGetLastError(nullptr);
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, sizeof(int)), cudaSuccess);
  const int one = 1;
  ASSERT_EQ(cudaMemcpy(buffer, &one, sizeof one, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(ncclAllReduce(buffer, buffer, 1, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
  int sum = 0;
  ASSERT_EQ(cudaMemcpy(&sum, buffer, sizeof sum, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(sum, mpidist::world_size()) << "the legacy stream's copy waits for the collective on it";
  EXPECT_EQ(cudaFree(buffer), cudaSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
