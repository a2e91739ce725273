// The emulated CUDA runtime's memory: what counts as device memory, host access to it, copies,
// frees and memory info.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "emu.hpp"
#include "mpidist/mpidist.hpp"
#include "mpi_test.hpp"

namespace {

using EmuMemory = mpidist_test::MpiTest;

TEST_F(EmuMemory, RunsAgainstTheEmulation) { EXPECT_EQ(mpidist_emu_is_emulation(), 1); }

TEST_F(EmuMemory, OnlyCudaMallocPointersAreDeviceMemory) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 100), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 100), cudaSuccess);
  std::vector<char> plain(100);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(device) + 99), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeDevice);
  EXPECT_EQ(a.device, 1);
  ASSERT_EQ(cudaPointerGetAttributes(&a, pinned), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost);
  ASSERT_EQ(cudaPointerGetAttributes(&a, plain.data()), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered);
  ASSERT_EQ(cudaPointerGetAttributes(&a, static_cast<char*>(device) + 100), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeUnregistered) << "one past the end is not the allocation";
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

// The driver's query, as libmpidist reaches it through the runtime, says the same.
TEST_F(EmuMemory, TheDriversPointerQueryAgrees) {
  using Query = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &function, 7000, cudaEnableDefault, &found),
            cudaSuccess);
  ASSERT_EQ(found, cudaDriverEntryPointSuccess);
  const auto query = reinterpret_cast<Query>(function);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void *device = nullptr, *pinned = nullptr, *managed = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 100), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 100), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, 100, cudaMemAttachGlobal), cudaSuccess);
  std::vector<char> plain(100);
  struct Expected { const void* pointer; unsigned int type; int device; bool managed; };
  for (const Expected& e : {Expected{static_cast<char*>(device) + 99, CU_MEMORYTYPE_DEVICE, 1, false},
                            Expected{pinned, CU_MEMORYTYPE_HOST, 1, false}, Expected{managed, CU_MEMORYTYPE_DEVICE, 1, true},
                            Expected{plain.data(), 0, -2, false}}) {
    CUpointer_attribute attributes[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                         CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned int type = 99;
    int ordinal = 99;
    bool is_managed = true;
    void* values[3] = {&type, &ordinal, &is_managed};
    ASSERT_EQ(query(3, attributes, values, reinterpret_cast<CUdeviceptr>(e.pointer)), CUDA_SUCCESS);
    EXPECT_EQ(type, e.type);
    EXPECT_EQ(ordinal, e.device);
    EXPECT_EQ(is_managed, e.managed);
  }
  void* none = &function;
  EXPECT_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &none, 7000, cudaEnableDefault, &found), cudaSuccess);
  EXPECT_EQ(found, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST_F(EmuMemory, HostDereferenceOfDeviceMemoryCrashes) {
  const char* probe = std::getenv("MPIDIST_EMU_TEST_PROBE");
  ASSERT_NE(probe, nullptr);
  if (mpidist::rank() != 0) return;
  // Under AddressSanitizer its SEGV handler would turn the crash into a report and exit 1: the
  // probe runs with it off (a later ASAN_OPTIONS flag wins), so the signal itself is what we see.
  const auto crashed = mpidist_test::run_command("ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:handle_segv=0\" " + std::string(probe), 30);
  EXPECT_EQ(crashed.exit_code, 128 + 11) << crashed.output;  // SIGSEGV
  EXPECT_EQ(crashed.output.find("read"), std::string::npos) << crashed.output;
  const auto allowed = mpidist_test::run_command(std::string("MPIDIST_EMU_PROTECT=0 ") + probe, 30);
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
}

TEST_F(EmuMemory, CopiesRoundTripAndFreshMemoryIsPoisoned) {
  std::vector<int> in{1, 2, 3, 4}, out(4, 0);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 16), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), device, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[0], -1) << "fresh device memory is filled with 0xff";
  ASSERT_EQ(cudaMemcpy(device, in.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), device, 16, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(out, in);
  ASSERT_EQ(cudaMemset(device, 0, 16), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), device, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out, std::vector<int>(4, 0)) << "the synchronous copy waits for the queued memset";
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST_F(EmuMemory, WrongDirectionsAndBadFreesAreErrors) {
  std::vector<char> host(64);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host.data(), 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host.data(), device, 65, cudaMemcpyDeviceToHost), cudaErrorInvalidValue) << "overrun";
  EXPECT_NE(std::string(mpidist_emu_last_diagnostic()).find("run past the end"), std::string::npos);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "cudaGetLastError resets";
  EXPECT_EQ(cudaFree(host.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(static_cast<char*>(device) + 8), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(device), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue) << "double free";
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  cudaGetLastError();
}

TEST_F(EmuMemory, MemGetInfoTracksAllocations) {
  size_t free0 = 0, total = 0, free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  EXPECT_GT(total, free0) << "the context already uses some memory";
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 64 << 20), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, size_t{64} << 20);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  void* huge = nullptr;
  EXPECT_EQ(cudaMalloc(&huge, total), cudaErrorMemoryAllocation);
  cudaGetLastError();
}

TEST_F(EmuMemory, DevicesHaveDistinctIdentities) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  ASSERT_GE(count, 2);
  cudaDeviceProp p0{}, p1{}, again{};
  ASSERT_EQ(cudaGetDeviceProperties(&p0, 0), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceProperties(&p1, 1), cudaSuccess);
  ASSERT_EQ(cudaGetDeviceProperties(&again, 0), cudaSuccess);
  EXPECT_NE(std::string(p0.uuid.bytes, 16), std::string(p1.uuid.bytes, 16));
  EXPECT_EQ(std::string(p0.uuid.bytes, 16), std::string(again.uuid.bytes, 16));
  EXPECT_EQ(cudaSetDevice(count), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetDeviceProperties(&p0, count), cudaErrorInvalidDevice);
  char bus[32];
  EXPECT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 1), cudaSuccess);
  EXPECT_STREQ(bus, "00000000:02:00.0");
  cudaGetLastError();
}

}  // namespace
