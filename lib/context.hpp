// The library's process-wide state, created by initialize() and destroyed by finalize(). Internal.
#pragma once

#include <mpi.h>

#include <functional>
#include <vector>

#include "mpidist/topology.hpp"

namespace mpidist::detail {

struct Context {
  MPI_Comm world = MPI_COMM_NULL;    // duplicate of the communicator mpidist was given
  MPI_Comm local = MPI_COMM_NULL;    // ranks of this (possibly simulated) node
  MPI_Comm leaders = MPI_COMM_NULL;  // local rank 0 of every node; MPI_COMM_NULL elsewhere
  Topology topology;
  bool owns_mpi = false;             // mpidist called MPI_Init_thread and must finalize
  std::vector<std::function<void()>> finalizers;  // run in reverse order before the communicators go
};

/// The live context; throws Error("<operation>: mpidist is not initialized ...") otherwise.
Context& context(const char* operation);
/// The live context or nullptr: for code that must not throw (error messages, destructors).
Context* context_if_initialized() noexcept;
/// Registers cleanup (an NCCL communicator, pinned buffers) to run at finalize().
void at_finalize(std::function<void()> cleanup);

/// Builds the topology of `world` (MPIDIST_RANKS_PER_NODE honoured) and fills ctx.local/leaders.
void discover_topology(Context& ctx);

/// Prints `message` with the rank prefix to stderr and aborts the whole job. Never returns.
[[noreturn]] void abort_job(const char* message) noexcept;

}  // namespace mpidist::detail
