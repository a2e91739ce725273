// Internals of the emulated NCCL: communicators, errors and the queued operations.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emu.hpp"

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

/// The joiners of a communicator smaller than MPI_COMM_WORLD, ordered by world rank, found through
/// files named after the id's token (nccl_rendezvous.cpp). Blocks until as many joiners as the
/// smallest plausible nranks among them arrived; aborts after MPIDIST_EMU_HANG_SECONDS.
std::vector<Joiner> rendezvous(const Joiner& mine, const char* call);
/// The id's random part as hex, naming its rendezvous ("" for an id not made by ncclGetUniqueId).
std::string id_token(const ncclUniqueId& id);
/// MPI_Wait that gives up: after MPIDIST_EMU_HANG_SECONDS it prints `what` and aborts, as the
/// emulation's other blocking waits do (a process that never joins must not hang the job).
void wait_request(MPI_Request* request, const std::string& what);
/// Registers a new communicator, making its handle valid.
ncclComm_t adopt(std::unique_ptr<ncclComm> comm);

/// Records `message` for ncclGetLastError, prints it, and returns `result`.
ncclResult_t nccl_fail(ncclResult_t result, const std::string& message);
/// Whether `comm` is a live communicator usable by `call` (else the error, with last-error text).
ncclResult_t check_comm(ncclComm_t comm, const char* call);

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
/// Cancels every queued operation of `comm` (ncclCommAbort).
void cancel_operations(ncclComm* comm);
/// Blocks until every queued operation of `comm` has completed (ncclCommFinalize).
void flush_operations(ncclComm* comm);

/// Element size of an NCCL data type (0 for types the emulation does not support).
std::size_t element_size(ncclDataType_t type);
/// Half-precision conversions, round to nearest even.
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_half(float value);
float bfloat16_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);

}  // namespace mpidist_emu
