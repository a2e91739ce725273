// EventWork: polling, waiting for, or ordering the caller's stream after an event.
#include "nccl/event_work.hpp"

#include <thread>

#include "cuda/runtime.hpp"

namespace mpidist::detail::nccl {

EventWork::EventWork(Group& group, Communicator& comm, const char* operation, const char* waiting_for,
                     cudaStream_t stream, cudaStream_t caller)
    : WorkState(group.name, operation), group_(&group), comm_(&comm), operation_(operation), waiting_for_(waiting_for),
      stream_(stream), caller_(caller), deadline_(operation, &group) {
  // Timing off: the cheapest kind of event.
  MPIDIST_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  if (const cudaError_t rc = cudaEventRecord(event_, stream_); rc != cudaSuccess) {
    cudaEventDestroy(event_);
    cuda::throw_cuda_error("cudaEventRecord", rc, __FILE__, __LINE__);
  }
}

// A stream that waits for the event keeps the record it was given: the event may go now.
EventWork::~EventWork() { cudaEventDestroy(event_); }

bool EventWork::poll() {
  bool done = false;
  aborting_on_failure(*group_, *comm_, operation_, [&] { done = check(); });
  return done;
}

void EventWork::complete() {
  aborting_on_failure(*group_, *comm_, operation_, [&] {
    if (check()) return;
    if (caller_ != nullptr) {
      // The caller's later work on its stream runs after ours; the host goes on at once.
      if (caller_ != stream_) MPIDIST_CUDA_CHECK(cudaStreamWaitEvent(caller_, event_, 0));
      return;
    }
    while (!check()) {
      if (deadline_.passed())
        abort_and_throw(*group_, *comm_, operation_, ncclInProgress, deadline_, waiting_for_);
      std::this_thread::yield();
    }
  });
}

bool EventWork::check() {
  const cudaError_t state = cudaEventQuery(event_);
  if (state == cudaSuccess) return true;
  if (state != cudaErrorNotReady) cuda::throw_cuda_error("cudaEventQuery", state, __FILE__, __LINE__);
  ncclResult_t async = ncclSuccess;
  MPIDIST_NCCL_CHECK(ncclCommGetAsyncError(comm_->get(), &async), comm_->get());
  if (async != ncclSuccess && async != ncclInProgress) abort_and_throw(*group_, *comm_, operation_, async, deadline_, "");
  return false;
}

}  // namespace mpidist::detail::nccl
