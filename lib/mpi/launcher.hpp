// What the MPI implementation's mpiexec needs from launch(), beside -n. Internal.
#pragma once

#include <string>
#include <vector>

namespace mpidist::detail::mpi {
/// Extra mpiexec arguments for `nproc` ranks on this machine: Open MPI refuses more ranks than
/// cores unless told --oversubscribe; MPICH's Hydra needs nothing.
std::vector<std::string> launcher_arguments(int nproc);
}  // namespace mpidist::detail::mpi
