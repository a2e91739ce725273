// Helpers shared by the NCCL emulation tests.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <string>

#include "mpidist/mpidist.hpp"

namespace emu_test {

/// An id made on rank 0 and broadcast, as production code does.
inline ncclUniqueId shared_id() {
  ncclUniqueId id{};
  if (mpidist::rank() == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpidist::communicator());
  return id;
}

/// A communicator over all ranks, each on its own device (device = rank).
inline ncclComm_t make_comm() {
  cudaSetDevice(mpidist::rank());
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRank(&comm, mpidist::world_size(), shared_id(), mpidist::rank());
  return r == ncclSuccess ? comm : nullptr;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace emu_test
