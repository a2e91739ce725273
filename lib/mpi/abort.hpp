// Ending the whole job from one rank, per MPI implementation. Internal.
#pragma once

#include <mpi.h>

namespace mpidist::detail::mpi {

/// Ends the job with a non-zero status and never returns. `mpi_thread` says whether this thread may
/// call MPI now (the thread that makes MPI calls, or any thread under MPI_THREAD_MULTIPLE).
/// Open MPI: MPI_Abort, from any thread (its runtime takes the abort over its own channel). Other
/// MPIs: MPI_Abort only from an MPI thread; from the watchdog's thread, while the main thread is
/// inside MPI, MPICH's MPI_Abort re-enters UCX's progress and dies on its assertion, so the process
/// exits instead, which ends the job the same way under Hydra (it ends every rank when one exits
/// without MPI_Finalize). MPICH's MPI_Abort calls exit(): the caller must leave nothing to destroy
/// that calls MPI.
[[noreturn]] void abort_job(MPI_Comm comm, bool mpi_thread) noexcept;

}  // namespace mpidist::detail::mpi
