// Test buffers that live in host memory, or in (real or emulated) CUDA device memory when the
// test is built with CUDA and MPIDIST_TEST_DEVICE=1, so one suite covers both paths.
#pragma once

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpidist/collectives.hpp"

#if MPIDIST_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace mpidist_test {

/// True when the tensors under test are device memory (MPIDIST_TEST_DEVICE=1 in a CUDA build).
inline bool on_device() {
#if MPIDIST_TEST_HAVE_CUDA
  const char* flag = std::getenv("MPIDIST_TEST_DEVICE");
  return flag != nullptr && std::string(flag) == "1";
#else
  return false;
#endif
}

#if MPIDIST_TEST_HAVE_CUDA
inline void cuda_ok(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc));
}
#endif

/// `count` elements of T, host or device; filled from and read back into host vectors.
template <class T>
class TestBuffer {
 public:
  explicit TestBuffer(const std::vector<T>& values) : host_(values) {
#if MPIDIST_TEST_HAVE_CUDA
    if (on_device() && !values.empty()) {
      mpidist::device();  // this rank's GPU, as the library will use it
      cuda_ok(cudaMalloc(&device_, bytes()), "cudaMalloc");
      cuda_ok(cudaMemcpy(device_, host_.data(), bytes(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
      // From pageable memory the copy lands later, on the legacy default stream: a call with a
      // non-blocking stream of the test's would not wait for it (calls without one do).
      cuda_ok(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize after the copy");
    }
#endif
  }
  ~TestBuffer() {
#if MPIDIST_TEST_HAVE_CUDA
    if (device_ != nullptr) cudaFree(device_);
#endif
  }
  TestBuffer(const TestBuffer&) = delete;
  TestBuffer& operator=(const TestBuffer&) = delete;

  T* data() { return device_ != nullptr ? static_cast<T*>(device_) : host_.data(); }
  std::size_t size() const { return host_.size(); }
  std::size_t bytes() const { return host_.size() * sizeof(T); }
  mpidist::BufferView view() { return mpidist::BufferView(data(), size(), mpidist::dtype_v<T>); }

  /// The current contents, copied back from the device if needed.
  std::vector<T> read() {
#if MPIDIST_TEST_HAVE_CUDA
    if (device_ != nullptr)
      cuda_ok(cudaMemcpy(host_.data(), device_, bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
#endif
    return host_;
  }

 private:
  std::vector<T> host_;
  void* device_ = nullptr;
};

}  // namespace mpidist_test
