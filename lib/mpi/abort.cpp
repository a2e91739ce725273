// Ending the whole job from one rank, per MPI implementation.
#include "mpi/abort.hpp"

#include <unistd.h>

#include <cstdio>

namespace mpidist::detail::mpi {

void abort_job(MPI_Comm comm, bool mpi_thread) noexcept {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef OPEN_MPI
  mpi_thread = true;
#endif
  if (mpi_thread) MPI_Abort(comm, 1);
  ::_exit(1);
}

}  // namespace mpidist::detail::mpi
