// The emulated NCCL's operations: results of every op, strict argument checks, queued semantics.
#include <cstdint>
#include <cstring>
#include <vector>

#include "emu.hpp"
#include "mpi_test.hpp"
#include "nccl_test_util.hpp"

namespace {

using EmuNcclOps = mpidist_test::MpiTest;
using emu_test::contains;

/// A communicator, a non-blocking stream and helpers to move typed data in and out.
struct CommSetup {
  ncclComm_t comm = emu_test::make_comm();
  cudaStream_t stream = nullptr;
  int rank = mpidist::rank();
  int size = mpidist::world_size();
  std::vector<void*> buffers;
  CommSetup() { cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); }
  ~CommSetup() {
    for (void* b : buffers) cudaFree(b);
    cudaStreamDestroy(stream);
    ncclCommDestroy(comm);
  }
  template <typename T>
  T* upload(const std::vector<T>& values) {
    void* p = nullptr;
    cudaMalloc(&p, values.size() * sizeof(T) + 1);  // +1: never zero bytes
    cudaMemcpy(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaStreamSynchronize(cudaStreamLegacy);  // a pageable copy lands later
    buffers.push_back(p);
    return static_cast<T*>(p);
  }
  template <typename T>
  std::vector<T> download(const T* device, std::size_t n) {
    std::vector<T> host(n);
    cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }
};

template <typename T>
void check_all_reduce(CommSetup& s, ncclDataType_t type) {
  const std::vector<T> mine{static_cast<T>(s.rank + 1), static_cast<T>(2), static_cast<T>(s.rank % 2 + 1)};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (ncclRedOp_t op : ops) {
    T* in = s.upload(mine);
    T* out = s.upload(std::vector<T>(3, T{}));
    ASSERT_EQ(ncclAllReduce(in, out, 3, type, op, s.comm, s.stream), ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
    const auto got = s.download(out, 3);
    for (std::size_t i = 0; i < 3; ++i) {
      double expect = op == ncclProd ? 1 : (op == ncclMin ? 1e30 : (op == ncclMax ? -1e30 : 0));
      for (int r = 0; r < s.size; ++r) {
        const double v = i == 0 ? r + 1 : (i == 1 ? 2 : r % 2 + 1);
        expect = op == ncclProd ? expect * v : op == ncclMax ? std::max(expect, v) : op == ncclMin ? std::min(expect, v) : expect + v;
      }
      if (op == ncclAvg) expect = static_cast<double>(static_cast<T>(expect / s.size));
      EXPECT_EQ(static_cast<double>(got[i]), expect) << "type " << type << " op " << op << " element " << i;
    }
  }
}

TEST_F(EmuNcclOps, AllReduceEveryTypeAndOp) {
  CommSetup s;
  ASSERT_NE(s.comm, nullptr);
  check_all_reduce<std::int8_t>(s, ncclInt8);
  check_all_reduce<std::uint8_t>(s, ncclUint8);
  check_all_reduce<std::int32_t>(s, ncclInt32);
  check_all_reduce<std::uint32_t>(s, ncclUint32);
  check_all_reduce<std::int64_t>(s, ncclInt64);
  check_all_reduce<std::uint64_t>(s, ncclUint64);
  check_all_reduce<float>(s, ncclFloat32);
  check_all_reduce<double>(s, ncclFloat64);
}

// Unsigned values with the top bit set must not be treated as signed (max, min), and averages
// of large values must not go through a narrower or signed type.
TEST_F(EmuNcclOps, UnsignedTypesKeepTheirHighValues) {
  CommSetup s;
  ASSERT_NE(s.comm, nullptr);
  const auto r = static_cast<std::uint64_t>(s.rank);
  const auto n = static_cast<std::uint64_t>(s.size);
  std::uint32_t* u32 = s.upload(std::vector<std::uint32_t>{0x80000000u + static_cast<std::uint32_t>(r), 0x20000000u + static_cast<std::uint32_t>(r)});
  std::uint32_t* u32_max = s.upload(std::vector<std::uint32_t>(2, 0));
  std::uint32_t* u32_avg = s.upload(std::vector<std::uint32_t>(2, 0));
  std::uint64_t* u64 = s.upload(std::vector<std::uint64_t>{(1ull << 63) + r, (1ull << 60) + r});
  std::uint64_t* u64_min = s.upload(std::vector<std::uint64_t>(2, 0));
  std::uint64_t* u64_avg = s.upload(std::vector<std::uint64_t>(2, 0));
  std::uint64_t* gathered = s.upload(std::vector<std::uint64_t>(2 * n, 0));
  ASSERT_EQ(ncclAllReduce(u32, u32_max, 2, ncclUint32, ncclMax, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(u32 + 1, u32_avg, 1, ncclUint32, ncclAvg, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(u64, u64_min, 2, ncclUint64, ncclMin, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(u64 + 1, u64_avg, 1, ncclUint64, ncclAvg, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclAllGather(u64, gathered, 2, ncclUint64, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
  const auto m32 = s.download(u32_max, 2);
  EXPECT_EQ(m32[0], 0x80000000u + static_cast<std::uint32_t>(n - 1));
  EXPECT_EQ(m32[1], 0x20000000u + static_cast<std::uint32_t>(n - 1));
  EXPECT_EQ(s.download(u32_avg, 1)[0], 0x20000000u + static_cast<std::uint32_t>((n - 1) / 2)) << "truncating average";
  EXPECT_EQ(s.download(u64_min, 2), (std::vector<std::uint64_t>{1ull << 63, 1ull << 60}));
  EXPECT_EQ(s.download(u64_avg, 1)[0], (1ull << 60) + (n - 1) / 2);
  const auto g = s.download(gathered, 2 * n);
  for (std::uint64_t p = 0; p < n; ++p) EXPECT_EQ(g[2 * p], (1ull << 63) + p);
}

TEST_F(EmuNcclOps, HalfTypesAccumulateInFloat) {
  CommSetup s;
  ASSERT_NE(s.comm, nullptr);
  // Halves are 2 apart at 2048: summed in half precision 2048 + 1 + 1 + 1 stays 2048; in float it
  // rounds once at the end.
  const std::vector<std::uint16_t> half(1, s.rank == 0 ? 0x6800 : 0x3c00);  // 2048, 1
  std::uint16_t* h = s.upload(half);
  ASSERT_EQ(ncclAllReduce(h, h, 1, ncclFloat16, ncclSum, s.comm, s.stream), ncclSuccess);
  const std::vector<std::uint16_t> bf{std::uint16_t{0x3fc0}};  // bfloat16 1.5
  std::uint16_t* b = s.upload(bf);
  ASSERT_EQ(ncclAllReduce(b, b, 1, ncclBfloat16, ncclAvg, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
  const std::uint16_t expected_half[] = {0, 0, 0x6800, 0x6801, 0x6802};  // 2049->2048, 2050, 2051->2052 (ties to even)
  EXPECT_EQ(s.download(h, 1)[0], expected_half[s.size]);
  EXPECT_EQ(s.download(b, 1)[0], 0x3fc0) << "average of equal values";
}

TEST_F(EmuNcclOps, BroadcastReduceAllGatherReduceScatter) {
  CommSetup s;
  ASSERT_NE(s.comm, nullptr);
  const int root = s.size - 1;
  const int n = 5;
  std::vector<int> mine(n);
  for (int i = 0; i < n; ++i) mine[static_cast<std::size_t>(i)] = 100 * s.rank + i;
  int* in = s.upload(mine);
  int* bcast = s.upload(std::vector<int>(n, -1));
  int* reduced = s.upload(std::vector<int>(n, -1));
  int* gathered = s.upload(std::vector<int>(static_cast<std::size_t>(n * s.size), -1));
  std::vector<int> scatter_in(static_cast<std::size_t>(n * s.size));
  for (std::size_t i = 0; i < scatter_in.size(); ++i) scatter_in[i] = static_cast<int>(i) + s.rank;
  int* sin = s.upload(scatter_in);
  int* sout = s.upload(std::vector<int>(n, -1));
  ASSERT_EQ(ncclBroadcast(in, bcast, n, ncclInt32, root, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclReduce(in, reduced, n, ncclInt32, ncclSum, root, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclAllGather(in, gathered, n, ncclInt32, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclReduceScatter(sin, sout, n, ncclInt32, ncclSum, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
  const int rank_sum = s.size * (s.size - 1) / 2;
  const auto b = s.download(bcast, n), r = s.download(reduced, n), g = s.download(gathered, static_cast<std::size_t>(n * s.size)),
             rs = s.download(sout, n);
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    EXPECT_EQ(b[k], 100 * root + i);
    EXPECT_EQ(r[k], s.rank == root ? 100 * rank_sum + s.size * i : -1) << "only the root's recvbuff is written";
    EXPECT_EQ(rs[k], s.size * (s.rank * n + i) + rank_sum);
    for (int p = 0; p < s.size; ++p) EXPECT_EQ(g[static_cast<std::size_t>(p * n + i)], 100 * p + i);
  }
}

TEST_F(EmuNcclOps, SendRecvRingInAGroup) {
  CommSetup s;
  ASSERT_NE(s.comm, nullptr);
  const int next = (s.rank + 1) % s.size, prev = (s.rank + s.size - 1) % s.size;
  double* out = s.upload(std::vector<double>(1000, s.rank));
  double* in = s.upload(std::vector<double>(1000, -1));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclSend(out, 1000, ncclFloat64, next, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclRecv(in, 1000, ncclFloat64, prev, s.comm, s.stream), ncclSuccess);
  EXPECT_EQ(mpidist_emu_pending_work(), 0) << "nothing is queued before the outermost ncclGroupEnd";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(mpidist_emu_pending_work(), 1) << "the group is one unit on the stream";
  ASSERT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
  EXPECT_EQ(s.download(in, 1000), std::vector<double>(1000, prev));
}

TEST_F(EmuNcclOps, HostPointersAndBadArgumentsAreRejected) {
  CommSetup s;
  ASSERT_NE(s.comm, nullptr);
  std::vector<float> host(4, 1.0f);
  float* device = s.upload(host);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 16), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(host.data(), device, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(s.comm), "not memory allocated by cudaMalloc")) << ncclGetLastError(s.comm);
  EXPECT_EQ(ncclAllReduce(device, pinned, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(s.comm), "cudaMallocHost"));
  EXPECT_EQ(ncclAllReduce(device, device, 5, ncclFloat32, ncclSum, s.comm, s.stream), ncclInvalidArgument) << "overrun";
  EXPECT_EQ(ncclAllReduce(device, device, 4, ncclFloat8e4m3, ncclSum, s.comm, s.stream), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(device, device, 4, ncclFloat32, static_cast<ncclRedOp_t>(7), s.comm, s.stream), ncclInvalidArgument);
  EXPECT_EQ(ncclBroadcast(device, device, 4, ncclFloat32, s.size, s.comm, s.stream), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(s.comm), "root"));
  EXPECT_EQ(ncclAllReduce(device, device, 4, ncclFloat32, ncclSum, nullptr, s.stream), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess) << "count 0";
  EXPECT_EQ(mpidist_emu_pending_work(), 0) << "count 0 queues nothing";
  EXPECT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
  cudaSetDevice(s.rank == 0 ? 1 : 0);
  void* other = nullptr;
  ASSERT_EQ(cudaMalloc(&other, 16), cudaSuccess);
  cudaSetDevice(s.rank);
  EXPECT_EQ(ncclAllReduce(other, other, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclInvalidArgument);
  EXPECT_TRUE(contains(ncclGetLastError(s.comm), "memory of device"));
  EXPECT_EQ(cudaFree(other), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidUsage), "invalid usage (run with NCCL_DEBUG=WARN for details)");
}

TEST_F(EmuNcclOps, QueuedUntilSynchronizedAndNotReadyUntilPeersArrive) {
  CommSetup s;
  ASSERT_NE(s.comm, nullptr);
  float* buffer = s.upload(std::vector<float>(8, 1.0f));
  if (s.rank == 0) {
    ASSERT_EQ(ncclAllReduce(buffer, buffer, 8, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
    EXPECT_EQ(cudaStreamQuery(s.stream), cudaErrorNotReady) << "the peers have not posted yet";
    EXPECT_EQ(cudaMemcpy(std::vector<float>(8).data(), buffer, 32, cudaMemcpyDeviceToHost), cudaErrorIllegalState)
        << "reading the result before synchronizing is caught";
    EXPECT_TRUE(contains(mpidist_emu_last_diagnostic(), "ncclAllReduce"));
  }
  MPI_Barrier(mpidist::communicator());
  if (s.rank != 0) {
    ASSERT_EQ(ncclAllReduce(buffer, buffer, 8, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess);
  EXPECT_EQ(s.download(buffer, 8), std::vector<float>(8, static_cast<float>(s.size)));
  cudaGetLastError();
}

}  // namespace
