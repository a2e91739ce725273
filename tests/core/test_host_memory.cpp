// surely_host (lib/core/host_memory.hpp): what it claims is host memory must be, and what it cannot
// vouch for (mmap'd memory, memory past the heap's end, null) it leaves to the CUDA query.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <thread>

#include "core/host_memory.hpp"

using mpidist::detail::surely_host;

namespace {

// A caller's frame: its buffers lie above surely_host's own frame.
[[gnu::noinline]] bool stack_buffer_is_host() {
  std::array<float, 4> buffer{};
  return surely_host(buffer.data()) && surely_host(buffer.data() + 3);
}

}  // namespace

TEST(HostMemory, TheCallersStackIsHost) {
  EXPECT_TRUE(stack_buffer_is_host());
  bool in_thread = false;
  std::thread([&] { in_thread = stack_buffer_is_host(); }).join();  // another thread's own stack
  EXPECT_TRUE(in_thread);
}

TEST(HostMemory, TheBrkHeapIsHostAndNothingPastItsEnd) {
  // Grown by hand, so that the test does not depend on where malloc (or a sanitizer's) puts things.
  auto* grown = static_cast<char*>(sbrk(4096));
  ASSERT_NE(grown, reinterpret_cast<char*>(-1));
  EXPECT_TRUE(surely_host(grown));
  EXPECT_TRUE(surely_host(grown + 4095));
  EXPECT_FALSE(surely_host(static_cast<char*>(sbrk(0)) + 1));  // past the end: unknown
  // Not given back: malloc may have grown the heap past it meanwhile.
}

TEST(HostMemory, MappedMemoryAndNullAreLeftToTheQuery) {
  void* mapped = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  EXPECT_FALSE(surely_host(mapped));  // where a driver maps device and managed memory too
  munmap(mapped, 1 << 20);
  EXPECT_FALSE(surely_host(nullptr));
}
