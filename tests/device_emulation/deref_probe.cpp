// Dereferences emulated device memory on the host, which must crash (SIGSEGV) as on real
// hardware; run by test_cuda_memory.cpp as a child process. Exit 0 means the read went through.
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  void* device = nullptr;
  if (cudaMalloc(&device, 64) != cudaSuccess) return 2;
  std::printf("read %d\n", static_cast<int>(*static_cast<volatile char*>(device)));
  return 0;
}
