// The last consistency check: at finalize() every rank shows how many calls it finished on each
// communicator and their fingerprint hash, so a rank that skipped a collective the others
// completed, or called another one, is reported by name instead of passing silently (or blocking
// in MPI_Finalize). Internal.
#pragma once

namespace mpidist::detail {

struct Context;

/// Collective over the world; ends the job with a report when the ranks disagree. Runs under the
/// watchdog: a rank that never arrives is reported at the timeout.
void check_at_finalize(Context& ctx);

}  // namespace mpidist::detail
