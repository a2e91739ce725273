// Helpers shared by the NCCL emulation tests.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <string>
#include <thread>

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

/// A config for a non-blocking communicator (calls may return ncclInProgress).
inline ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/// Polls ncclCommGetAsyncError until the state leaves ncclInProgress (at most about 20 s).
inline ncclResult_t settle(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  for (int poll = 0; poll < 200000 && state == ncclInProgress; ++poll) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclSystemError;
    if (poll > 100) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return state;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace emu_test
