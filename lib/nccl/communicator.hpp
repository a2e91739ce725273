// The NCCL communicator behind a group, and the NCCL check macro. Compiled only
// with MPIDIST_HAVE_NCCL. Internal.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "mpidist/error.hpp"

#include "core/group.hpp"
#include "watch/timeout.hpp"

namespace mpidist::detail::nccl {

/// Throws Error naming the NCCL call with ncclGetErrorString and ncclGetLastError(comm).
[[noreturn]] void throw_nccl_error(const char* call, ncclResult_t code, ncclComm_t comm, const char* file, int line);

/// One group's NCCL communicator and the stream its collectives run on when the caller gives none.
/// Owned by the Group (Group::nccl); the destructor tears both down (see teardown()) and never
/// throws.
class Communicator {
 public:
  /// `teardown_seconds`: how long the destructor waits for ncclCommFinalize before aborting.
  Communicator(ncclComm_t comm, int device, cudaStream_t stream, double teardown_seconds) noexcept
      : comm_(comm), device_(device), stream_(stream), teardown_seconds_(teardown_seconds) {}
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();

  ncclComm_t get() const noexcept { return comm_; }
  /// The CUDA device the communicator was created on.
  int device() const noexcept { return device_; }
  cudaStream_t stream() const noexcept { return stream_; }
  /// Aborts pending NCCL work and frees the communicator (after an error or a timeout); later use
  /// raises Error naming `operation`.
  void abort(const char* operation) noexcept;
  /// The operation whose failure aborted the communicator, or "" while it is usable.
  const std::string& aborted_by() const noexcept { return aborted_by_; }

 private:
  ncclComm_t comm_;
  int device_;
  cudaStream_t stream_;
  double teardown_seconds_;
  std::string aborted_by_;
};

/// Frees `comm` the way NCCL 2.28 allows: only ncclCommAbort when it holds an asynchronous error
/// (2.28's ncclCommDestroy returns from inside its own group there without closing it, and every
/// later NCCL call of the thread, the abort included, is then swallowed); otherwise
/// ncclCommFinalize, polled for at most `seconds`, then ncclCommDestroy, or ncclCommAbort when the
/// finalize fails or does not finish in time (a collective stuck on a dead peer). Never throws.
void teardown(ncclComm_t comm, double seconds) noexcept;

/// The group's communicator, created on first use (a collective over the group): GPU check, unique
/// id from the group's rank 0 over its MPI control channel, cudaSetDevice, then a non-blocking
/// ncclCommInitRankConfig polled under the group's timeout (on expiry: ncclCommAbort, the group
/// is broken, Error). Throws Error if an earlier failure aborted it.
Communicator& communicator(Group& group, const char* operation);

/// mpidist's NCCL communicators are non-blocking (config.blocking = 0): a call may return
/// ncclInProgress, and until ncclCommGetAsyncError leaves ncclInProgress its work may not be
/// queued yet and NCCL refuses further calls on the communicator. Polls until then and returns
/// the state reached: ncclSuccess, NCCL's asynchronous error, or ncclInProgress once `deadline`
/// passed (or the error of ncclCommGetAsyncError itself).
ncclResult_t settle(ncclComm_t comm, const Deadline& deadline);

/// "unhandled system error (NCCL error 2): <ncclGetLastError>", for messages.
std::string describe(ncclResult_t code, ncclComm_t comm);

/// After `operation` failed inside NCCL with `code`: aborts the communicator (its peers may be
/// stuck in the same call, and only an abort releases them), marks the group broken and throws
/// Error naming both. ncclInProgress means `deadline` passed: the timeout Error.
[[noreturn]] void abort_and_throw(Group& group, Communicator& comm, const char* operation, ncclResult_t code,
                                  const Deadline& deadline, const char* waiting_for);

/// Runs the NCCL and CUDA steps of `operation` on `comm`. Any Error escaping them (a failed
/// enqueue, ncclGroupEnd, cudaEventRecord, cudaStreamQuery...) aborts the communicator, which NCCL
/// has marked failed anyway, and breaks the group with a text naming that first failure; the
/// Error then says so. Errors already handled by abort_and_throw pass through unchanged.
template <class F>
void aborting_on_failure(Group& group, Communicator& comm, const char* operation, F&& steps) {
  try {
    steps();
  } catch (const Error& e) {
    if (!comm.aborted_by().empty()) throw;  // abort_and_throw did all this already
    comm.abort(operation);
    break_group(group, std::string(operation) + " failed: " + e.operation() + ": " + e.detail());
    throw Error(group.name, operation, e.operation() + ": " + e.detail() +
                                           "; the NCCL communicator was aborted. The communicator can no longer be used");
  }
}

}  // namespace mpidist::detail::nccl

/// Evaluates an NCCL call; any result but ncclSuccess becomes mpidist::Error.
#define MPIDIST_NCCL_CHECK(call, comm)                                                          \
  do {                                                                                          \
    const ncclResult_t mpidist_nccl_rc_ = (call);                                               \
    if (mpidist_nccl_rc_ != ncclSuccess)                                                        \
      ::mpidist::detail::nccl::throw_nccl_error(#call, mpidist_nccl_rc_, comm, __FILE__, __LINE__); \
  } while (0)
