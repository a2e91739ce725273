// Start a multi-rank job from a plain `./program` (ignite `spawn`, virtex `launch`).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace mpidist {

struct LaunchOptions {
  /// The launcher; empty means $MPIDIST_MPIEXEC, else the mpiexec of the MPI mpidist was built
  /// with (mpiexec.mpich for a Debian MPICH build), else "mpiexec".
  std::string mpiexec;
  /// Extra launcher arguments placed before `-n`; empty means $MPIDIST_MPIEXEC_ARGS split on
  /// spaces. With Open MPI, `--oversubscribe` is added when nproc exceeds the host's cores.
  std::vector<std::string> mpiexec_args;
};

/// True when this process was started by an MPI launcher (mpiexec, srun) or by launch().
bool started_by_launcher();

/// Run alone, re-executes this program (same arguments) under `mpiexec -n nproc`, waits, and
/// returns the launcher's exit code (128 + signal if it was killed). Under a launcher already, it
/// initializes mpidist if needed, runs `fn` on this rank, finalizes what it initialized and
/// returns 0. The child processes are marked, so launch() never recurses.
int launch(int nproc, const std::function<void()>& fn, const LaunchOptions& options = {});

}  // namespace mpidist
