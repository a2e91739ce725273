// Ending the job after a rank said why (watchdog, consistency check, an Error that escapes): the
// reports of the host's other ranks first, then the MPI's abort. Internal.
#pragma once

#include <mpi.h>

#include <vector>

#include "core/context.hpp"
#include "watch/remote_progress.hpp"

namespace mpidist::detail {

/// Ranks of other hosts whose own reports of the same call are due: they ask this host about its
/// ranks (remote_progress.hpp), and the job must not end before they had their answer.
struct ReportsElsewhere {
  RemoteProgress::Questions asked_before;  // this rank's answered queries when its report began
  std::vector<int> ranks;                  // world ranks
};

/// Ends the job with a non-zero status once this rank's report is out; never returns. Launchers
/// end every rank the moment one ends (Hydra sends SIGTERM and SIGKILL together, leaving no time to
/// report; Open MPI's runtime sends SIGTERM and waits), so first every other live rank of this host
/// says its part: those that are reporting, or whose own watchdog or timeout is due within 2 s,
/// are waited for; the rest (a rank computing, or waiting in a later call) get SIGTERM, on which
/// each says what it was in and dumps its flight recorder (fatal_signals.cpp), as under Open MPI.
/// The rank that answers other hosts' queries (its host's first) answers `elsewhere`'s before its
/// report counts as out, for at most 1.5 s, and every query while it waits.
/// `mpi_thread`: whether the calling thread is the one that makes MPI calls.
[[noreturn]] void end_job_after_report(Context& ctx, MPI_Comm comm, bool mpi_thread,
                                       const ReportsElsewhere& elsewhere = {}) noexcept;

/// For a rank that said its part on end_job_after_report's SIGTERM: waits until the other ranks of
/// this host asked with it have said theirs, at most as long as the asking rank waits for them
/// (1 s). Hydra SIGKILLs every rank the moment one dies, which would cut their dumps short.
/// Async-signal-safe.
void await_host_peers_answers(const Context& ctx) noexcept;

}  // namespace mpidist::detail
