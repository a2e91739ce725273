// Internals of the emulated NCCL: communicators, errors and the queued operations.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emu.hpp"

namespace mpidist_emu {
struct PendingInit;
struct HeldLaunch;
}  // namespace mpidist_emu

/// The communicator behind ncclComm_t. Never freed: a destroyed or aborted one stays as a
/// tombstone so that later use is reported instead of being undefined.
struct ncclComm {
  enum class State { Ready, Finalized, Destroyed, Aborted };
  int rank = 0;
  int nranks = 0;
  int device = 0;
  MPI_Comm mpi = MPI_COMM_NULL;      ///< the members, MPI rank == NCCL rank: the operations' requests
  MPI_Comm control = MPI_COMM_NULL;  ///< a duplicate for ncclCommSplit, so it never matches queued operations
  State state = State::Ready;
  std::uint64_t queued = 0;   ///< operations handed out (sequence numbers)
  std::uint64_t started = 0;  ///< operations whose MPI request is posted, in sequence order
  bool abandoned_requests = false;
  // Non-blocking mode (config.blocking = 0). `async` is what ncclCommGetAsyncError reports:
  // ncclInProgress while the initialization (`init`) or a launch (`launch`) is pending, an error
  // when the initialization failed (`failure` says why). Anything but ncclSuccess makes every
  // other call on the communicator fail, as NCCL's ncclCommEnsureReady does.
  bool blocking = true;
  bool finalizing = false;  ///< non-blocking ncclCommFinalize in progress (ncclInProgress until its work drained)
  ncclResult_t async = ncclSuccess;
  std::string failure;
  std::shared_ptr<mpidist_emu::PendingInit> init;
  std::shared_ptr<mpidist_emu::HeldLaunch> launch;
};

namespace mpidist_emu {

/// What one process brings to ncclCommInitRank; all members check the same table of these.
struct Joiner {
  ncclUniqueId id;
  int world_rank;
  int rank;
  int nranks;
  int device;
  int device_set;
  int bad_arguments;  ///< a local mistake (null comm pointer, bad config): everyone fails, nobody hangs
  cudaUUID_t uuid;
  char host[256];
};

// Where the joiners of a communicator smaller than MPI_COMM_WORLD meet: files named after the
// id's token (nccl_rendezvous.cpp). Polled, so that a non-blocking init never blocks.

/// Leaves this joiner's record at the id's rendezvous; returns the rendezvous directory.
std::string rendezvous_join(const Joiner& mine, const char* call);
/// One look: true once as many joiners as the smallest plausible nranks among them arrived, with
/// `table` ordered by world rank (this joiner then signs out; the last one removes the directory).
bool rendezvous_poll(const std::string& dir, const Joiner& mine, std::vector<Joiner>* table);
/// Takes this joiner's record back (ncclCommAbort before the others arrived).
void rendezvous_withdraw(const std::string& dir, const Joiner& mine);
/// "process 0 (rank 0), process 2 (rank 1)": who has arrived so far, for diagnostics.
std::string rendezvous_arrivals(const std::string& dir);
/// The id's random part as hex, naming its rendezvous ("" for an id not made by ncclGetUniqueId).
std::string id_token(const ncclUniqueId& id);
/// MPI_Wait that gives up: after MPIDIST_EMU_HANG_SECONDS it prints `what` and aborts, as the
/// emulation's other blocking waits do (a process that never joins must not hang the job).
void wait_request(MPI_Request* request, const std::string& what);
/// Registers a new communicator, making its handle valid.
ncclComm_t adopt(std::unique_ptr<ncclComm> comm);

/// Records `message` for ncclGetLastError, prints it, and returns `result`.
ncclResult_t nccl_fail(ncclResult_t result, const std::string& message);
/// Whether `comm` is a live communicator usable by `call` (else the error, with last-error text):
/// known, not destroyed or aborted, and not busy (ensure_ready).
ncclResult_t check_comm(ncclComm_t comm, const char* call);
/// NCCL's ncclCommEnsureReady: ncclInvalidArgument while a non-blocking initialization or launch
/// is pending ("Attempt to use communicator before the previous operation returned ncclSuccess"),
/// the initialization's error after it failed, else ncclSuccess.
ncclResult_t ensure_ready(ncclComm_t comm, const char* call);

/// The arguments of one NCCL operation.
struct OpArgs {
  enum class Kind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Send, Recv };
  Kind kind = Kind::AllReduce;
  const char* call = "";
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;  ///< per-rank count, as NCCL defines it for each call
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0;           ///< root, or peer for Send/Recv
};

/// Validates and queues (or, inside a group, defers) one operation.
ncclResult_t submit(ncclComm_t comm, const OpArgs& args, cudaStream_t stream);
/// Cancels every queued operation of `comm` (ncclCommAbort), held launches included.
void cancel_operations(ncclComm* comm);
/// ncclCommGetAsyncError's progress on a non-blocking communicator: queues the operations whose
/// launch is pending on it (they reach their streams only now, as NCCL's launch thread would).
void complete_launch(ncclComm* comm);
/// Blocks until every queued operation of `comm` has completed (ncclCommFinalize).
void flush_operations(ncclComm* comm);
/// Whether `comm` has queued operations not yet complete; drives their streams once, never blocks.
bool operations_pending(ncclComm* comm);
/// NCCL 2.28's ncclCommDestroy of a failed communicator: leaves the thread inside a group.
void leave_group_open();
/// Inside a group left open that way, ncclCommAbort is only queued (never run until an
/// ncclGroupEnd closes the group): true when `comm`'s abort was swallowed so.
bool swallow_abort(ncclComm* comm);

/// Element size of an NCCL data type (0 for types the emulation does not support).
std::size_t element_size(ncclDataType_t type);
/// Half-precision conversions, round to nearest even.
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_half(float value);
float bfloat16_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);

}  // namespace mpidist_emu
