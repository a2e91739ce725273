// Point-to-point on device memory through NCCL: a batch of ncclSend/ncclRecv as one group on the
// group's non-blocking communicator, then (without a caller's stream) a Work that polls an event
// recorded after it, bounded by the group's timeout as the collectives' waits are.
#include <span>
#include <string>
#include <thread>

#include "core/device_backend.hpp"
#include "cuda/runtime.hpp"
#include "nccl/communicator.hpp"
#include "nccl/datatypes.hpp"
#include "watch/timeout.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace nccl {
namespace {

// A batch queued on the group's own stream: done when the event recorded after it is.
class BatchWork final : public WorkState {
 public:
  BatchWork(Group& group, Communicator& comm, const char* operation, cudaEvent_t event)
      : WorkState(group.name, operation), group_(&group), comm_(&comm), operation_(operation), event_(event),
        deadline_(operation, &group) {}
  ~BatchWork() override { cudaEventDestroy(event_); }

  bool poll() override {
    bool done = false;
    aborting_on_failure(*group_, *comm_, operation_, [&] { done = check(); });
    return done;
  }

  void complete() override {
    aborting_on_failure(*group_, *comm_, operation_, [&] {
      while (!check()) {
        if (deadline_.passed())
          abort_and_throw(*group_, *comm_, operation_, ncclInProgress, deadline_, "the peer's matching send or receive");
        std::this_thread::yield();
      }
    });
  }

 private:
  bool check() {
    const cudaError_t state = cudaEventQuery(event_);
    if (state == cudaSuccess) return true;
    if (state != cudaErrorNotReady) cuda::throw_cuda_error("cudaEventQuery", state, __FILE__, __LINE__);
    ncclResult_t async = ncclSuccess;
    MPIDIST_NCCL_CHECK(ncclCommGetAsyncError(comm_->get(), &async), comm_->get());
    if (async != ncclSuccess && async != ncclInProgress) abort_and_throw(*group_, *comm_, operation_, async, deadline_, "");
    return false;
  }

  Group* group_;
  Communicator* comm_;
  const char* operation_;
  cudaEvent_t event_;
  Deadline deadline_;  // from the start: a message that never matches is reported at the timeout
};

// A Work that is done at once: the batch is queued on the caller's stream.
class QueuedWork final : public WorkState {
 public:
  QueuedWork(Group& group, const char* operation) : WorkState(group.name, operation) {}
  bool poll() override { return true; }
  void complete() override {}
};

}  // namespace
}  // namespace nccl

std::unique_ptr<WorkState> start_nccl_p2p(Group& group, const char* operation, std::span<const DeviceMessage> messages,
                                          Stream user_stream) {
  auto& comm = nccl::communicator(group, operation);
  const Deadline deadline(operation, &group);
  std::unique_ptr<WorkState> work;
  nccl::aborting_on_failure(group, comm, operation, [&] {
    const cudaStream_t stream = user_stream ? user_stream : comm.stream();
    if (user_stream == nullptr) cuda::order_after_default_stream(operation, comm.device(), stream);
    MPIDIST_NCCL_CHECK(ncclGroupStart(), comm.get());
    ncclResult_t rc = ncclSuccess;
    for (const DeviceMessage& m : messages) {
      const ncclDataType_t type = nccl::datatype(m.dtype);
      rc = m.receiving ? ncclRecv(m.data, m.count, type, m.peer, comm.get(), stream)
                       : ncclSend(m.data, m.count, type, m.peer, comm.get(), stream);
      if (rc != ncclSuccess && rc != ncclInProgress) {
        ncclGroupEnd();  // closed before the abort that follows, which an open group would only queue
        nccl::throw_nccl_error(m.receiving ? "ncclRecv" : "ncclSend", rc, comm.get(), __FILE__, __LINE__);
      }
    }
    rc = ncclGroupEnd();
    if (rc != ncclSuccess && rc != ncclInProgress) nccl::throw_nccl_error("ncclGroupEnd", rc, comm.get(), __FILE__, __LINE__);
    if (rc == ncclInProgress) {
      const ncclResult_t state = nccl::settle(comm.get(), deadline);
      if (state != ncclSuccess)
        nccl::abort_and_throw(group, comm, operation, state, deadline, "NCCL to launch the messages");
    }
    if (user_stream != nullptr) {
      work = std::make_unique<nccl::QueuedWork>(group, operation);
      return;
    }
    cudaEvent_t event = nullptr;
    MPIDIST_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    if (const cudaError_t rc2 = cudaEventRecord(event, stream); rc2 != cudaSuccess) {
      cudaEventDestroy(event);
      cuda::throw_cuda_error("cudaEventRecord", rc2, __FILE__, __LINE__);
    }
    work = std::make_unique<nccl::BatchWork>(group, comm, operation, event);
  });
  return work;
}

}  // namespace mpidist::detail
