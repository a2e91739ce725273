// The NCCL path: device buffers, one NCCL call per collective on a non-blocking communicator, the
// launch settled, then (without a caller's stream) a wait that polls the stream and NCCL's
// asynchronous error; both bounded by the group's timeout (set_timeout, else MPIDIST_TIMEOUT).
// Without a caller's stream the library's stream is first ordered after the legacy default
// stream (cuda/ordering.cpp). The non-blocking calls' start: the same launch on the library's
// stream, and a Work on an event recorded after it (event_work.hpp). Any failure on the way
// aborts the communicator and breaks the group.
#include <span>
#include <string>
#include <thread>

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

// NCCL's ncclAvg sums and divides (integers: a division after the sum, truncating toward zero).
ncclRedOp_t reduction(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Product: return ncclProd;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Avg: return ncclAvg;
    default: break;  // And/Or: the front end rejects them for tensors
  }
  throw Error("nccl", "reduction '" + std::string(to_string(op)) + "' has no NCCL counterpart");
}

// Hands one collective to NCCL. On mpidist's non-blocking communicators ncclInProgress means
// "accepted, still being launched" (settled by the caller); anything else but success is an Error.
ncclResult_t enqueue(const Call& c, ncclComm_t comm, cudaStream_t stream) {
  const auto [type, count] = as_nccl(c.dtype, c.count);
  ncclResult_t rc = ncclSuccess;
  const char* name = "";
  switch (c.kind) {
    case CollectiveKind::AllReduce:
      rc = ncclAllReduce(c.in, c.out, count, type, reduction(c.op), comm, stream), name = "ncclAllReduce";
      break;
    case CollectiveKind::Broadcast:
      rc = ncclBroadcast(c.in, c.out, count, type, c.root, comm, stream), name = "ncclBroadcast";
      break;
    case CollectiveKind::Reduce:
      rc = ncclReduce(c.in, c.out, count, type, reduction(c.op), c.root, comm, stream), name = "ncclReduce";
      break;
    case CollectiveKind::AllGather:
      rc = ncclAllGather(c.in, c.out, count, type, comm, stream), name = "ncclAllGather";
      break;
    case CollectiveKind::ReduceScatter:
      rc = ncclReduceScatter(c.in, c.out, count, type, reduction(c.op), comm, stream), name = "ncclReduceScatter";
      break;
  }
  if (rc != ncclSuccess && rc != ncclInProgress) throw_nccl_error(name, rc, comm, __FILE__, __LINE__);
  return rc;
}

// Until a non-blocking call leaves ncclInProgress its work may not be on the stream yet (a stream
// query would say "done" too early) and NCCL refuses the next call; on first use NCCL connects
// to the peers here, so a peer that never calls can hold it: bounded like the wait below.
void launched(const Call& call, Communicator& comm, ncclResult_t rc, const Deadline& deadline) {
  if (rc != ncclInProgress) return;
  const ncclResult_t state = settle(comm.get(), deadline);
  if (state != ncclSuccess)
    abort_and_throw(*call.group, comm, call.name, state, deadline, "NCCL to launch the collective");
}

// Waits for `stream` without blocking inside CUDA, so that a peer that never arrives, or an
// asynchronous NCCL failure, ends in an Error instead of a hang. Either way the communicator is
// aborted (abort_and_throw): its peers may be stuck in the same collective.
void wait(const Call& call, Communicator& comm, cudaStream_t stream, const Deadline& deadline) {
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) cuda::throw_cuda_error("cudaStreamQuery", state, __FILE__, __LINE__);  // aborts
    ncclResult_t async = ncclSuccess;
    MPIDIST_NCCL_CHECK(ncclCommGetAsyncError(comm.get(), &async), comm.get());
    if (async != ncclSuccess && async != ncclInProgress)
      abort_and_throw(*call.group, comm, call.name, async, deadline, "");
    if (deadline.passed())
      abort_and_throw(*call.group, comm, call.name, ncclInProgress, deadline, "the NCCL collective to finish");
    std::this_thread::yield();
  }
}

// Queues `calls` on `stream` and settles the launch: one call alone, several between one
// ncclGroupStart and ncclGroupEnd, so NCCL launches them as one unit.
void queue(std::span<const Call> calls, Communicator& comm, cudaStream_t stream, const Deadline& deadline) {
  const Call& first = calls.front();
  if (calls.size() == 1) return launched(first, comm, enqueue(first, comm.get(), stream), deadline);
  MPIDIST_NCCL_CHECK(ncclGroupStart(), comm.get());
  try {
    for (const Call& call : calls) enqueue(call, comm.get(), stream);
  } catch (...) {
    // Close the group before the abort that follows: an abort issued inside an open group is
    // only queued there, and would never run.
    ncclGroupEnd();
    throw;
  }
  const ncclResult_t rc = ncclGroupEnd();
  if (rc != ncclSuccess && rc != ncclInProgress) throw_nccl_error("ncclGroupEnd", rc, comm.get(), __FILE__, __LINE__);
  launched(first, comm, rc, deadline);
}

}  // namespace
}  // namespace nccl

void run_nccl(const Call& call) { run_nccl_many(std::span(&call, 1)); }

void run_nccl_many(std::span<const Call> calls) {
  if (calls.empty()) return;
  const Call& first = calls.front();
  auto& comm = nccl::communicator(*first.group, first.name);
  const Deadline deadline(first.name, first.group, Deadline::Watch::Refusals);
  nccl::aborting_on_failure(*first.group, comm, first.name, [&] {
    // Without a caller's stream: the group's non-blocking stream, after the legacy default
    // stream's work, then wait here until done.
    const cudaStream_t stream = first.stream ? first.stream : comm.stream();
    if (first.stream == nullptr) cuda::order_after_default_stream(first.name, comm.device(), stream);
    nccl::queue(calls, comm, stream, deadline);
    if (first.stream == nullptr) nccl::wait(first, comm, stream, deadline);
  });
}

std::unique_ptr<WorkState> start_nccl_many(std::span<const Call> calls) {
  const Call& first = calls.front();
  auto& comm = nccl::communicator(*first.group, first.name);
  const Deadline deadline(first.name, first.group, Deadline::Watch::Refusals);
  std::unique_ptr<WorkState> work;
  nccl::aborting_on_failure(*first.group, comm, first.name, [&] {
    // Always on the group's stream, after the work queued so far on the caller's (or the legacy
    // default) stream: the caller's stream goes on with its own work until wait() orders it after
    // ours, as torch's Work.wait() does.
    const cudaStream_t stream = comm.stream();
    cuda::order_after(first.name, comm.device(), first.stream ? first.stream : cudaStreamLegacy, stream);
    nccl::queue(calls, comm, stream, deadline);
    work = std::make_unique<nccl::EventWork>(*first.group, comm, first.name, "the NCCL collective to finish", stream,
                                             first.stream);
  });
  return work;
}

}  // namespace mpidist::detail
