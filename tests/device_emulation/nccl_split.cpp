// Emulated ncclCommSplit (NCCL >= 2.18 semantics): collective over every rank of the parent;
// ranks passing the same color form a communicator, ordered by key then parent rank (exactly
// MPI_Comm_split's order); NCCL_SPLIT_NOCOLOR gives NULL. The children use the parent's device.
//
// The exchange runs on the parent's control communicator, not the one its queued operations use:
// a split issued while operations are still queued (not yet posted) must not match them.
#include <string>
#include <vector>

#include "nccl_internal.hpp"

namespace mpidist_emu {
namespace {

/// What one rank passes to ncclCommSplit; a bad one fails every rank the same way.
struct Choice {
  int color;
  int key;
  int problem;  ///< 0, or which of the messages below
};

const char* problem_text(int problem) {
  switch (problem) {
    case 1: return "passed a null newcomm pointer";
    case 2: return "passed a config not set from NCCL_CONFIG_INITIALIZER (or a config.blocking other than 0 or 1)";
    default: return "passed a negative color other than NCCL_SPLIT_NOCOLOR";
  }
}

}  // namespace
}  // namespace mpidist_emu

using namespace mpidist_emu;

extern "C" ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (const ncclResult_t r = check_comm(comm, "ncclCommSplit"); r != ncclSuccess) return r;
  if (newcomm != nullptr) *newcomm = nullptr;
  Choice mine{color, key, 0};
  if (newcomm == nullptr) {
    mine.problem = 1;
  } else if (config != nullptr && (config->magic != 0xcafebeef || config->size != sizeof(ncclConfig_t) ||
                                    (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 &&
                                     config->blocking != 1))) {
    mine.problem = 2;
  } else if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    mine.problem = 3;
  }
  std::vector<Choice> all(static_cast<std::size_t>(comm->nranks));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm->control, &request);
  wait_request(&request, "ncclCommSplit on a communicator of " + std::to_string(comm->nranks) + " ranks");
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].problem != 0)
      return nccl_fail(ncclInvalidArgument, "ncclCommSplit: rank " + std::to_string(r) + " " + problem_text(all[r].problem));
  }
  MPI_Comm members = MPI_COMM_NULL;
  MPI_Comm_split(comm->control, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &members);
  if (members == MPI_COMM_NULL) return ncclSuccess;
  auto child = std::make_unique<ncclComm>();
  child->mpi = members;
  MPI_Comm_rank(members, &child->rank);
  MPI_Comm_size(members, &child->nranks);
  child->device = comm->device;
  // As in NCCL: without a config the child inherits the parent's mode; NCCL_COMM_BLOCKING wins.
  // The split itself completes before returning, which NCCL may also do in non-blocking mode.
  child->blocking = config == nullptr ? comm->blocking : config->blocking != 0;
  if (mpidist_emu::config().comm_blocking >= 0) child->blocking = mpidist_emu::config().comm_blocking != 0;
  MPI_Comm_dup(members, &child->control);
  *newcomm = adopt(std::move(child));
  return ncclSuccess;
}
