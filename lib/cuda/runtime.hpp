// CUDA runtime helpers shared by lib/cuda/ and lib/nccl/: the check macro and the library's own
// streams. Compiled only with MPIDIST_HAVE_CUDA. Internal.
#pragma once

#include <cuda_runtime_api.h>

namespace mpidist::detail::cuda {

/// Throws Error naming the CUDA call, its error name and text, and the source location.
[[noreturn]] void throw_cuda_error(const char* call, cudaError_t code, const char* file, int line);

/// The library's stream on `device`, created on first use with cudaStreamNonBlocking so that it
/// never waits for (or is waited on by) the legacy default stream; destroyed at finalize.
cudaStream_t library_stream(const char* operation, int device);

/// The visible device count (0 on any error, e.g. no driver). Cached after the first call.
int device_count() noexcept;

/// This rank's device (local_rank % count), made current on the calling thread if mpidist has
/// not done so there yet; -1 before initialize() or without a device (the thread's device is then
/// left as the application set it).
int ensure_rank_device();

/// Orders `stream` after all work queued so far on `before` (a stream of `device`): an event
/// recorded there and waited for by `stream`. Queued; the host does not wait.
void order_after(const char* operation, int device, cudaStream_t before, cudaStream_t stream);

/// order_after the legacy default stream of `device`, and so after every blocking stream of it.
void order_after_default_stream(const char* operation, int device, cudaStream_t stream);

}  // namespace mpidist::detail::cuda

/// Evaluates a CUDA runtime call; any result but cudaSuccess becomes mpidist::Error. The error is
/// also cleared from the runtime's per-thread "last error" so later calls start clean.
#define MPIDIST_CUDA_CHECK(call)                                                          \
  do {                                                                                    \
    const cudaError_t mpidist_cuda_rc_ = (call);                                          \
    if (mpidist_cuda_rc_ != cudaSuccess)                                                  \
      ::mpidist::detail::cuda::throw_cuda_error(#call, mpidist_cuda_rc_, __FILE__, __LINE__); \
  } while (0)
