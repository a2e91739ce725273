// The library's process-wide state, created by initialize() and destroyed by finalize(): the
// world group, the job-wide settings and the registry of live groups. Everything else lives on a
// Group. Internal.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <vector>

#include "group.hpp"
#include "mpidist/topology.hpp"
#include "settings.hpp"

namespace mpidist::detail {

struct Context {
  std::shared_ptr<Group> world;      // duplicate of the communicator mpidist was given
  Topology topology;                 // the world's, with every rank's placement
  Settings settings;
  bool owns_mpi = false;             // mpidist called MPI_Init_thread and must finalize
  std::vector<std::weak_ptr<Group>> groups;       // every group made, freed at finalize()
  std::vector<std::function<void()>> finalizers;  // run in reverse order before the groups go
};

/// The live context; throws Error("<operation>: mpidist is not initialized ...") otherwise.
Context& context(const char* operation);
/// The live context or nullptr: for code that must not throw (error messages, destructors).
Context* context_if_initialized() noexcept;
/// Registers cleanup (process-wide CUDA streams) to run at finalize().
void at_finalize(std::function<void()> cleanup);

/// This rank's node as a color for MPI_Comm_split over `world`: its lowest world rank, from
/// MPI_Comm_split_type, or rank / k with MPIDIST_RANKS_PER_NODE=k. Collective.
int node_color(MPI_Comm world, int rank);
/// Fills ctx.topology from the world group and every rank's host name. Collective.
void discover_topology(Context& ctx);

/// Prints `message` with the rank prefix to stderr and aborts the whole job. Never returns.
[[noreturn]] void abort_job(const char* message) noexcept;

}  // namespace mpidist::detail
