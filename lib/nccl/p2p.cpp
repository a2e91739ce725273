// Point-to-point on device memory through NCCL: a batch of ncclSend/ncclRecv as one group on the
// group's non-blocking communicator, then (without a caller's stream) a Work that polls an event
// recorded after it (event_work.hpp), bounded by the group's timeout as the collectives' waits are.
#include <span>
#include <string>

#include "core/device_backend.hpp"
#include "cuda/runtime.hpp"
#include "nccl/communicator.hpp"
#include "nccl/datatypes.hpp"
#include "nccl/event_work.hpp"
#include "watch/timeout.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace nccl {
namespace {

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
      const auto [type, count] = nccl::as_nccl(m.dtype, m.count);
      rc = m.receiving ? ncclRecv(m.data, count, type, m.peer, comm.get(), stream)
                       : ncclSend(m.data, count, type, m.peer, comm.get(), stream);
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
    work = std::make_unique<nccl::EventWork>(group, comm, operation, "the peer's matching send or receive", stream,
                                             nullptr);
  });
  return work;
}

}  // namespace mpidist::detail
