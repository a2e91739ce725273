// Lifecycle of the library: MPI start-up (or adoption), the library's own communicator, shutdown.
#pragma once

#include <mpi.h>

namespace mpidist {

/// Thread support requested from MPI_Init_thread.
enum class ThreadLevel { Single = MPI_THREAD_SINGLE, Funneled = MPI_THREAD_FUNNELED,
                         Serialized = MPI_THREAD_SERIALIZED, Multiple = MPI_THREAD_MULTIPLE };

/// RAII owner of mpidist's state (ignite `initialize`/`finalize`, speechbrain `ddp_init_group`).
///
/// Starts MPI with MPI_Init_thread, or adopts an MPI the application already initialized (and then
/// leaves finalizing it to the application); duplicates the world communicator for the library's
/// own use and discovers the topology once. A program started without mpiexec is a world of one.
/// If an exception escapes while the environment is alive, the job is aborted with a message that
/// names the rank, instead of leaving the other ranks hanging in their next collective.
class Environment {
 public:
  /// Uses no command line (MPI implementations no longer need argc/argv).
  explicit Environment(ThreadLevel level = ThreadLevel::Funneled);
  Environment(int& argc, char**& argv, ThreadLevel level = ThreadLevel::Funneled);
  /// Adopts `comm` (already initialized MPI) and works on a duplicate of it.
  explicit Environment(MPI_Comm comm);
  ~Environment();

  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

 private:
  int uncaught_at_start_;
  bool owns_;
};

/// Free-function form of Environment: initializes once; later calls are no-ops.
void initialize(ThreadLevel level = ThreadLevel::Funneled);
void initialize(int& argc, char**& argv, ThreadLevel level = ThreadLevel::Funneled);
/// Initializes on a duplicate of `comm`, which must come from an already initialized MPI.
void initialize(MPI_Comm comm);
/// Releases the library's communicators and finalizes MPI if mpidist started it. Safe to call twice.
void finalize();
/// ignite `sync`: brings mpidist in line with an MPI that the application started or finished on
/// its own — adopts an initialized MPI (on MPI_COMM_WORLD) when mpidist is not initialized, and drops
/// mpidist's state when MPI was finalized behind its back. Otherwise a no-op.
void sync();
/// True between initialize() (or an Environment's construction) and finalize().
bool is_initialized() noexcept;
/// True when the world has more than one rank.
bool is_distributed();
/// The library's own communicator (a duplicate of the one it was given). Use it to mix raw MPI
/// calls with mpidist without interfering with the application's own messages.
MPI_Comm communicator();

}  // namespace mpidist
