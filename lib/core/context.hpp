// The library's process-wide state, created by initialize() and destroyed by finalize(): the
// world group, the job-wide settings and the registry of live groups. Everything else lives on a
// Group. Internal.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/group.hpp"
#include "core/settings.hpp"
#include "mpidist/topology.hpp"

namespace mpidist::detail {

// Owned here, made and used by lib/watch/ (the layer above): only named in this layer.
class FlightRecorder;
class ProgressBoard;
class RefusalNotices;
class RemoteProgress;
class Watchdog;

struct Context {
  std::shared_ptr<Group> world;      // duplicate of the communicator mpidist was given
  Topology topology;                 // the world's, with every rank's placement
  // The ranks on this rank's machine, every host that shares its kernel counted (namespaced hosts,
  // containers), and how many CPUs they may run on together: whether a wait may spin.
  int machine_ranks = 1;
  int machine_cpus = 1;
  // Whether some machine of the job runs more ranks than they have CPUs: the same on every rank,
  // so that choices across hosts made from it agree (shm/collectives.cpp).
  bool cores_shared_somewhere = false;
  // Whether two hosts on one machine share CPUs (hosts_share_cores: namespaces or containers on
  // one box), so that one host's ranks wait for cores the other's hold. Where cores are shared only
  // within each host, as on real machines, the leaders' paths across hosts help the more.
  bool hosts_share_cores = false;
  Settings settings;
  bool owns_mpi = false;             // mpidist called MPI_Init_thread and must finalize
  std::vector<std::weak_ptr<Group>> groups;       // every group made, freed at finalize()
  std::vector<std::function<void()>> finalizers;  // run in reverse order before the groups go
  std::uint64_t groups_made = 0;         // serial of the last group made (Group::key)
  int thread_level = MPI_THREAD_SINGLE;  // what MPI provides
  std::uintptr_t init_thread = 0;        // this_thread_token() of the initializing thread
  // No silent hangs: every rank's progress where its host peers can read it, the ring of recent
  // calls, and the thread that watches both (watchdog.hpp).
  std::unique_ptr<ProgressBoard> board;
  std::unique_ptr<FlightRecorder> recorder;
  std::unique_ptr<RemoteProgress> remote;  // other hosts' progress, asked (remote_progress.hpp)
  std::unique_ptr<RefusalNotices> notices;  // refusals told to other hosts (refusal_notices.hpp)
  std::unique_ptr<Watchdog> watchdog;
  // A wait gave up (it timed out, or a peer refused its call), its requests pending: finalize()
  // must not wait for the other ranks.
  std::atomic<bool> timed_out{false};
  std::string first_break;               // the first communicator that broke, and why ("" if none)
};

/// The live context; throws Error("<operation>: mpidist is not initialized ...") otherwise.
Context& context(const char* operation);
/// The live context or nullptr: for code that must not throw (error messages, destructors).
Context* context_if_initialized() noexcept;
/// Makes `group` known to the flight recorder and the watchdog (lib/watch/flight_recorder.cpp).
void watch_group(Context& ctx, Group& group);
/// Forgets the group of `key` there, when it is freed. Never throws.
void unwatch_group(Context& ctx, std::uint64_t key) noexcept;
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
