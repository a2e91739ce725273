// The MPI library's name and version, for show_config and mpidist-info. Internal.
#pragma once

#include <string>

namespace mpidist::detail::mpi {
/// One line naming the MPI library actually loaded (MPI_Get_library_version, not the headers):
/// "Open MPI v4.1.4", "MPICH 4.0.2 (ch4:ucx)", or the first line an other MPI reports.
std::string library_version();
}  // namespace mpidist::detail::mpi
