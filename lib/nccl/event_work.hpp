// The Work of NCCL work queued on a stream: an event recorded after it says when it is done.
// Shared by the point-to-point batches (p2p.cpp) and the non-blocking collectives
// (collectives.cpp). Compiled only with MPIDIST_HAVE_NCCL. Internal.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/group.hpp"
#include "nccl/communicator.hpp"
#include "watch/timeout.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail::nccl {

/// Done when the event recorded after the work on `stream` is. test() polls the event and NCCL's
/// asynchronous error. wait() depends on `caller` (the caller's stream, or null):
/// - null: blocks the host until the event, bounded by the group's timeout from the start;
/// - a stream: makes `caller` wait for the event (nothing to do where `caller` is `stream`) and
///   returns without the host waiting; NCCL's asynchronous error is checked first.
/// Any failure aborts the communicator and breaks the group, as a blocking call's does.
class EventWork final : public WorkState {
 public:
  /// Records the event on `stream`, after the work queued there so far. Throws on a CUDA error.
  /// `waiting_for` names what a timeout waited for ("the NCCL collective to finish").
  EventWork(Group& group, Communicator& comm, const char* operation, const char* waiting_for, cudaStream_t stream,
            cudaStream_t caller);
  ~EventWork() override;

  bool poll() override;
  void complete() override;

 private:
  bool check();  // the event's state; throws NCCL's asynchronous error

  Group* group_;
  Communicator* comm_;
  const char* operation_;
  const char* waiting_for_;
  cudaEvent_t event_ = nullptr;
  cudaStream_t stream_;
  cudaStream_t caller_;
  Deadline deadline_;  // from the start: work that never completes is reported at the timeout
};

}  // namespace mpidist::detail::nccl
