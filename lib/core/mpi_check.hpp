// One checked-call macro for MPI. Internal.
#pragma once

#include <mpi.h>

namespace mpidist::detail {
/// Throws Error naming the MPI call, its error class/string and the source location.
[[noreturn]] void throw_mpi_error(const char* call, int code, const char* file, int line);
}  // namespace mpidist::detail

/// Evaluates an MPI call; a code other than MPI_SUCCESS becomes mpidist::Error. The library's
/// communicators use MPI_ERRORS_RETURN, so MPI failures arrive here instead of aborting.
#define MPIDIST_MPI_CHECK(call)                                                        \
  do {                                                                                 \
    const int mpidist_mpi_rc_ = (call);                                                \
    if (mpidist_mpi_rc_ != MPI_SUCCESS)                                                \
      ::mpidist::detail::throw_mpi_error(#call, mpidist_mpi_rc_, __FILE__, __LINE__);  \
  } while (0)
