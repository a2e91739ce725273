// What launch() needs to know about the MPI implementation's launcher: its program, its extra
// arguments, and the environment it hands its ranks. Internal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mpidist::detail::mpi {

/// The mpiexec of the MPI this library was built with (Debian installs several side by side:
/// mpiexec.openmpi, mpiexec.mpich), or "mpiexec" when the build did not find it on this machine.
std::string default_mpiexec();

/// Extra mpiexec arguments for `nproc` ranks on this machine: Open MPI refuses more ranks than
/// cores unless told --oversubscribe; MPICH's Hydra oversubscribes by default and needs nothing.
std::vector<std::string> launcher_arguments(int nproc);

/// Variables a launcher sets in every rank's environment (this MPI's own mpiexec, and srun's
/// PMI-2 or PMIx): one of them present before MPI_Init means the process was launched.
const std::vector<std::string_view>& launcher_variables();

/// Whether `name` belongs to the MPI runtime (its settings and the variables it adds to a
/// singleton's own environment during MPI_Init).
bool is_runtime_variable(std::string_view name);

}  // namespace mpidist::detail::mpi
