// The driver of mpidist-bench: sweeps the sizes of one op, checks the data and times mpidist
// against raw MPI (and raw NCCL) interleaved, printing a table row per size as it completes.
#pragma once

#include <iosfwd>
#include <vector>

#include "bench.hpp"

namespace bench {

/// What a finished sweep produced.
struct SweepOutcome {
  RunInfo info;
  std::vector<Result> results;
  std::size_t raw_wrong = 0;  ///< wrong values of the raw sides (a benchmark bug, not mpidist's)
};

/// Collective over MPI_COMM_WORLD: runs `op` as `options` say. Rank 0 writes the table to `out`.
SweepOutcome run_sweep(const OpHooks& op, const Options& options, std::ostream& out);

/// Statistics of per-iteration times (seconds) as microseconds: median, min, max.
Timing summarize(std::vector<double> seconds);

}  // namespace bench
