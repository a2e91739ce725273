// Whether the MPI library reads device memory itself (CUDA-aware MPI). Open MPI answers through
// its extension header, MPICH 4 through the same call declared in mpi.h (true only when MPICH
// was built with GPU support and MPIR_CVAR_ENABLE_GPU is on); other MPIs have no such query.
#include <mpi.h>

#if MPIDIST_HAVE_MPI_EXT
#include <mpi-ext.h>
#endif

#include "core/device_info.hpp"

namespace mpidist::detail {

std::string cuda_aware_mpi() {
  // Asked at run time (the library loaded may differ from the headers compiled against), once:
  // the answer does not change while the job runs, and the device path asks on every call.
  static const std::string answer = [] {
#if MPIDIST_HAVE_MPI_EXT && defined(MPIX_CUDA_AWARE_SUPPORT)
    return std::string(MPIX_Query_cuda_support() ? "yes" : "no");
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000 && !defined(OPEN_MPI)
    return std::string(MPIX_Query_cuda_support() ? "yes" : "no");
#else
    return std::string("unknown");
#endif
  }();
  return answer;
}

}  // namespace mpidist::detail
