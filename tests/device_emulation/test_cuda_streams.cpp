// The emulated CUDA runtime's streams: queued work takes effect only when synchronized, missing
// synchronizations are reported, and legacy default stream semantics hold.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "emu.hpp"
#include "mpi_test.hpp"

namespace {

using EmuStreams = mpidist_test::MpiTest;

// A device buffer of `n` ints set to `value`, synchronously.
int* device_ints(int n, int value) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, sizeof(int) * static_cast<size_t>(n)), cudaSuccess);
  std::vector<int> host(static_cast<size_t>(n), value);
  EXPECT_EQ(cudaMemcpy(p, host.data(), sizeof(int) * host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);  // a pageable copy lands later
  return static_cast<int*>(p);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(EmuStreams, QueuedCopyTakesEffectOnlyWhenSynchronized) {
  int* device = device_ints(4, 7);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  std::vector<int> host(4, 0);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), device, 16, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(host[0], 0) << "stale before synchronization";
  EXPECT_EQ(mpidist_emu_pending_work(), 1);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(host, std::vector<int>(4, 7));
  ASSERT_EQ(cudaMemcpyAsync(host.data(), device, 16, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess) << "a completed query also drives the stream";
  EXPECT_EQ(mpidist_emu_pending_work(), 0);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  cudaGetLastError();
}

TEST_F(EmuStreams, MissingSynchronizationIsCaught) {
  int* device = device_ints(4, 1);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 0, 16, s), cudaSuccess);
  std::vector<int> host(4, 5);
  // The legacy default stream does not wait for a non-blocking stream: reading now is a race.
  EXPECT_EQ(cudaMemcpy(host.data(), device, 16, cudaMemcpyDeviceToHost), cudaErrorIllegalState);
  EXPECT_TRUE(contains(mpidist_emu_last_diagnostic(), "missing cudaStreamSynchronize"));
  EXPECT_EQ(host, std::vector<int>(4, 5)) << "nothing was copied";
  EXPECT_EQ(cudaFree(device), cudaErrorIllegalState) << "freeing memory a queued op writes";
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), device, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host, std::vector<int>(4, 0));
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  cudaGetLastError();
}

TEST_F(EmuStreams, SynchronousCopyWaitsForBlockingStreams) {
  int* device = device_ints(4, 1);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);  // blocking: ordered with the legacy stream
  ASSERT_EQ(cudaMemsetAsync(device, 0, 16, s), cudaSuccess);
  std::vector<int> host(4, 5);
  EXPECT_EQ(cudaMemcpy(host.data(), device, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host, std::vector<int>(4, 0));
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST_F(EmuStreams, RaceBetweenStreamsIsReported) {
  int* device = device_ints(4, 1);
  cudaStream_t writer = nullptr, reader = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking), cudaSuccess);
  std::vector<int> host(4, 0);
  ASSERT_EQ(cudaMemsetAsync(device, 0, 16, writer), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), device, 16, cudaMemcpyDeviceToHost, reader), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(reader), cudaErrorIllegalState);
  EXPECT_TRUE(contains(mpidist_emu_last_diagnostic(), "race"));
  EXPECT_EQ(cudaStreamSynchronize(writer), cudaSuccess);

  // Ordered with an event, the same pattern is correct.
  cudaEvent_t done = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 0x01, 16, writer), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, writer), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(reader, done, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), device, 16, cudaMemcpyDeviceToHost, reader), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(reader), cudaSuccess);
  EXPECT_EQ(host, std::vector<int>(4, 0x01010101));
  EXPECT_EQ(cudaEventDestroy(done), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(writer), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(reader), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  cudaGetLastError();
}

TEST_F(EmuStreams, EventSynchronizeRunsOnlyUpToTheRecord) {
  int* device = device_ints(4, 1);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t start = nullptr, middle = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&middle), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 0, 16, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(middle, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 0x02, 16, s), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, middle), cudaErrorNotReady);
  ASSERT_EQ(cudaEventSynchronize(middle), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(middle), cudaSuccess);
  EXPECT_EQ(mpidist_emu_pending_work(), 1) << "the memset after the record is still queued";
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, middle), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(mpidist_emu_pending_work(), 0);
  std::vector<int> host(4, 0);
  ASSERT_EQ(cudaMemcpy(host.data(), device, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host, std::vector<int>(4, 0x02020202));
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(middle), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(middle), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  cudaGetLastError();
}

TEST_F(EmuStreams, VersionsAndErrorText) {
  int runtime = 0, driver = 0;
  EXPECT_EQ(cudaRuntimeGetVersion(&runtime), cudaSuccess);
  EXPECT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  EXPECT_EQ(runtime, CUDART_VERSION);
  EXPECT_GE(driver, runtime);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorNotReady), "device not ready");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  EXPECT_EQ(cudaStreamQuery(reinterpret_cast<cudaStream_t>(0x1234)), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

}  // namespace
