// The pointer queries on a GPU node, 200,000 each after 1,000 warm-up: the runtime call mpidist
// makes (cudaPointerGetAttributes) against the driver calls, on mmap-ed, brk-heap, device and pinned
// memory. Built on the 2-core machine against CUDA 13 and run on the H200 node:
//   g++ -O2 -std=c++20 pointer_queries.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 \
//       -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -o pointer_queries
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
template <class F> double ns(F f, int n = 200000) {
  for (int i = 0; i < 1000; ++i) f();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}
int main() {
  cudaSetDevice(0);
  cudaFree(nullptr);
  std::vector<float> big(1 << 20);      // mmap'd host
  float* small = (float*)malloc(64);    // brk heap
  void* dev = nullptr; cudaMalloc(&dev, 1 << 20);
  void* pinned = nullptr; cudaMallocHost(&pinned, 1 << 20);
  struct { const char* name; const void* p; } ptrs[] = {{"host-mmap", big.data()}, {"host-brk", small}, {"device", dev}, {"pinned", pinned}};
  volatile int sink = 0;
  for (auto& q : ptrs) {
    double a = ns([&] { cudaPointerAttributes at{}; cudaPointerGetAttributes(&at, q.p); sink = at.type; cudaGetLastError(); });
    double b = ns([&] { unsigned int t = 0; CUresult r = cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)q.p); sink = t + r; });
    double c = ns([&] {
      CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
      unsigned int t = 0; int d = -1; void* data[2] = {&t, &d};
      CUresult r = cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)q.p); sink = t + d + r; });
    unsigned int t = 0; CUresult r = cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)q.p);
    cudaPointerAttributes at{}; cudaPointerGetAttributes(&at, q.p);
    std::printf("%-10s cudaPointerGetAttributes %7.1f ns (type %d) | cuPointerGetAttribute(MEMORY_TYPE) %7.1f ns (rc %d type %u) | cuPointerGetAttributes(2) %7.1f ns\n",
                q.name, a, (int)at.type, b, (int)r, t, c);
  }
  return 0;
}
