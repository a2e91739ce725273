// Stream ordering of a device collective called without a stream: after the caller's work on the
// legacy default stream (torch orders its collectives after the current stream in the same way).
//
// The library's streams are cudaStreamNonBlocking, so they never wait for the legacy default
// stream on their own: a kernel that produced the gradients, or a pageable cudaMemcpy whose DMA
// has not landed, would race with the collective. One event recorded on cudaStreamLegacy and
// waited for by the library's stream closes that gap; work on the legacy stream waits for every
// blocking stream, so the collective is after all of them too. Both calls only queue. A
// non-blocking collective given a stream is ordered after it the same way (order_after): it runs
// on the library's stream, and its Work's wait() orders the caller's stream after it.
#include <map>
#include <mutex>
#include <string>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "cuda/runtime.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace cuda {
namespace {

// One event per device, reused (also to order the library's stream after a caller's: order_after):
// a record replaces the previous one, and a wait uses the record current at the call, which is
// all this needs. Timing off: the cheapest kind of event.
cudaEvent_t ordering_event(const char* operation, int device) {
  static std::mutex lock;
  static std::map<int, cudaEvent_t> events;
  const std::lock_guard<std::mutex> hold(lock);
  if (auto found = events.find(device); found != events.end()) return found->second;
  cudaEvent_t event = nullptr;
  if (const cudaError_t rc = cudaEventCreateWithFlags(&event, cudaEventDisableTiming); rc != cudaSuccess) {
    cudaGetLastError();
    throw Error(operation, std::string("cannot create the ordering event on cuda:") + std::to_string(device) + ": " +
                               cudaGetErrorString(rc));
  }
  if (events.empty())
    at_finalize([] {
      const std::lock_guard<std::mutex> again(lock);
      for (auto& [index, e] : events) cudaEventDestroy(e);
      events.clear();
    });
  events.emplace(device, event);
  return event;
}

}  // namespace

void order_after(const char* operation, int device, cudaStream_t before, cudaStream_t stream) {
  const cudaEvent_t event = ordering_event(operation, device);
  MPIDIST_CUDA_CHECK(cudaEventRecord(event, before));
  MPIDIST_CUDA_CHECK(cudaStreamWaitEvent(stream, event, 0));
}

void order_after_default_stream(const char* operation, int device, cudaStream_t stream) {
  order_after(operation, device, cudaStreamLegacy, stream);
}

}  // namespace cuda

void synchronize_stream(const char* operation, Stream stream, int device) {
  if (stream != nullptr) {
    const cudaError_t rc = cudaStreamSynchronize(stream);
    if (rc != cudaSuccess) {
      cudaGetLastError();
      throw Error(operation, std::string("cudaStreamSynchronize on the caller's stream failed: ") + cudaGetErrorString(rc));
    }
    return;
  }
  // The host reads the buffers next (CUDA-aware MPI): wait for what the legacy stream holds now.
  const cudaEvent_t event = cuda::ordering_event(operation, device);
  MPIDIST_CUDA_CHECK(cudaEventRecord(event, cudaStreamLegacy));
  MPIDIST_CUDA_CHECK(cudaEventSynchronize(event));
}

}  // namespace mpidist::detail
