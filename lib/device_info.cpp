#include "device_info.hpp"

#include <mpi.h>

#if MPIDIST_HAVE_MPI_EXT
#include <mpi-ext.h>
#endif
#if MPIDIST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#if MPIDIST_HAVE_NCCL
#include <nccl.h>
#endif

namespace mpidist::detail {

std::string describe_cuda_device(int local_rank) {
#if MPIDIST_HAVE_CUDA
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();  // clear the error so later CUDA calls start clean
    if (rc == cudaErrorInsufficientDriver) return "none (no NVIDIA driver)";
    if (rc == cudaErrorNoDevice) return "none (no CUDA device visible)";
    return std::string("none (") + cudaGetErrorString(rc) + ")";
  }
  if (count == 0) return "none (no CUDA device visible)";
  const int device = local_rank % count;
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return "cuda:" + std::to_string(device);
  return "cuda:" + std::to_string(device) + " " + properties.name;
#else
  (void)local_rank;
  return "none (built without CUDA)";
#endif
}

std::string nccl_version() {
#if MPIDIST_HAVE_NCCL
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // Since 2.9 the code is major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
#else
  return "none";
#endif
}

std::string cuda_aware_mpi() {
#if MPIDIST_HAVE_MPI_EXT && defined(MPIX_CUDA_AWARE_SUPPORT)
  // Asked at run time: the library loaded may differ from the headers compiled against.
  return MPIX_Query_cuda_support() ? "yes" : "no";
#else
  return "unknown";
#endif
}

}  // namespace mpidist::detail
