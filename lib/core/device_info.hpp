// Facts about CUDA, NCCL and CUDA-aware MPI that hold with or without those libraries, answered by
// lib/cuda (or no_cuda.cpp), lib/nccl (or no_nccl.cpp) and lib/mpi. Internal.
#pragma once

#include <string>

namespace mpidist::detail {
/// The CUDA device this rank would use (local_rank % device count) with its name, or
/// "none (<why>)" when CUDA is not built or no device is visible.
std::string describe_cuda_device(int local_rank);
/// NCCL's run-time version ("2.28.9"), or "none" when built without NCCL.
std::string nccl_version();
/// "yes"/"no" from MPIX_Query_cuda_support(), "unknown" where the MPI has no such query.
std::string cuda_aware_mpi();
}  // namespace mpidist::detail
