// The state behind a Communicator: one group of ranks and everything mpidist keeps for it.
// Internal.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mpidist/communicator.hpp"

namespace mpidist::detail {

class AsyncLane;

/// Where this rank sits inside one group.
struct GroupTopology {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int node_rank = 0;
  int num_nodes = 1;
};

class Group {
 public:
  /// Collective over `owned`, which the group takes over (a duplicate made for it). `world_rank`
  /// is this process's rank in the world; `node_color` its node as the world sees it (real or
  /// simulated): ranks of one node share it. `serial` counts the groups this process made before:
  /// with the members' largest serial it makes `key` unique among groups of the same members.
  Group(MPI_Comm owned, std::string name, int world_rank, int node_color, std::uint64_t serial = 0);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  /// Frees the MPI communicators and the device resources; later use raises Error. Idempotent.
  void release() noexcept;
  bool released() const noexcept { return comm == MPI_COMM_NULL; }

  MPI_Comm comm = MPI_COMM_NULL;     // the user's traffic: collectives and object calls
  MPI_Comm control = MPI_COMM_NULL;  // mpidist's own agreement messages, never matched by a user call
  MPI_Comm local = MPI_COMM_NULL;    // the group's ranks on this node
  MPI_Comm leaders = MPI_COMM_NULL;  // local rank 0 of every node; MPI_COMM_NULL elsewhere
  // The ranks of this rank's local index on every node: the 2D collectives' cross-node step
  // (lib/shm/two_level.cpp), split from `comm` at the group's first 2D call and kept.
  MPI_Comm across = MPI_COMM_NULL;
  // Made with `across`: the group rank of local rank l on `across` rank j at l * num_nodes + j,
  // and the `across` rank of each of this node's local ranks (the 2D all-gather's block places).
  std::vector<int> grid;
  std::vector<int> node_across;
  // The group's ranks on each of its nodes (lib/shm/node_members.hpp), worked out at the group's
  // first call through the nodes' leaders and kept; only the thread inside a call touches it.
  std::vector<std::vector<int>> node_members;
  // The 2D collectives' data on the network (PieceRing, lib/shm/two_level.hpp), kept between
  // calls; handed to finalize() when a call leaves with requests pending, which MPI may still
  // write when a late peer arrives.
  std::shared_ptr<std::vector<std::byte>> across_buffer;
  GroupTopology topology;
  std::vector<int> world_ranks;      // world rank of every group rank
  int tag_upper_bound = 32767;       // MPI_TAG_UB of comm, read once here rather than on every p2p call
  std::string name;
  std::uint64_t sequence = 0;        // collectives started on this group
  // The watchdog's view (call_scope.hpp): the group's identity across ranks, its progress slot,
  // the running fingerprint hash, its own timeout and why it broke.
  std::uint64_t key = 0;             // hash of name and members: the same on every member
  int progress_slot = -1;            // in this rank's RankRecord, -1 when untracked
  std::uint64_t hash = 0;
  // fold_fingerprint's key of the last operation name started here, and that name (a string
  // literal: compared by address). Hashing the name cost a tenth of a small call; only the thread
  // inside a call (the owner) touches them.
  const char* folded_op = nullptr;
  std::uint64_t folded_op_key = 0;
  double timeout_seconds = -1;       // set_timeout(); negative: the job's MPIDIST_TIMEOUT
  // Why the group can no longer be used; empty while healthy. Written once, under broken_mutex,
  // by break_group, which may run on the group's async lane (a timed-out queued collective): read it
  // through is_broken() first.
  std::string broken;
  std::atomic<bool> broken_flag{false};
  std::mutex broken_mutex;
  bool is_broken() const noexcept { return broken_flag.load(std::memory_order_acquire); }
  // Set just before an Error that every rank of the call raises alike (an agreement's verdict):
  // the ranks stay in step, so the call's end leaves the group usable. Read and reset by the
  // owning call's finish_call (call_scope.cpp); only the thread inside a call touches it.
  bool failed_in_step = false;
  // With failed_in_step: the hash this rank's peers hold after the call, when it is known and
  // differs from this rank's (a receiver that refused the root's type: the root completed).
  std::optional<std::uint64_t> hash_after_failure;
  std::atomic<std::uintptr_t> owner{0};  // the thread inside a collective on it, 0 when none
  std::uint64_t monitored_barriers = 0;  // monitored_barrier calls, numbering their messages
  // Device resources, created lazily by lib/nccl and lib/cuda (type-erased: no CUDA type here).
  std::shared_ptr<void> nccl;
  std::shared_ptr<void> staging;
  // The node's shared-memory segment (lib/shm/segment.hpp), made at the first shm collective.
  std::shared_ptr<void> shm;
  // all_reduce_many's packing buffer across nodes (lib/tensors/fusion.cpp), kept between calls.
  std::shared_ptr<void> fusion;
  // Device isend/irecv not launched yet (lib/tensors/p2p.cpp): NCCL runs them as one group.
  std::shared_ptr<void> device_p2p;
  // Point-to-point datatypes kept for the addresses they describe (mpi/p2p_messages.hpp,
  // MessageTypes), made at the first message past the packing limit; p2p_types_once guards it.
  std::shared_ptr<void> p2p_types;
  std::once_flag p2p_types_once;
  // The non-blocking collectives' queue and thread (core/async_lane.hpp), made at the first
  // async call; drained before any blocking call on the group and before the group goes.
  std::shared_ptr<AsyncLane> lane;
  // Whether the group's nodes are on more than one host (host names differ; simulated nodes share
  // one), and the group's ranks on each of its nodes when every node holds the same number, else 0.
  // lib/shm's host all-reduce chooses by them (MPI, leader-only or 2D). Worked out by lib/shm from
  // the job's placement table at the group's first cross-node all-reduce, so the same on every
  // member; -1 until then. Atomic: at ThreadLevel::Multiple the lane's step and the caller's next
  // issue may be first at once; spans_hosts is stored first, so a reader that sees ranks_per_node
  // set sees both.
  std::atomic<int> spans_hosts{-1};
  std::atomic<int> ranks_per_node{-1};
  // The transport the group's last tensor collective took (lib/tensors/transports.cpp, type-erased:
  // core knows no transport) and the call's shape, everything the choice reads that differs from
  // call to call. A loop of one collective skips the table; only the thread inside a call touches it.
  struct Route {
    const void* transport = nullptr;
    int kind = -1, dtype = -1, op = -1, device = -1, size = 0;
    std::size_t count = 0;
  } route;
};

/// Opens Communicator handles for the library.
struct GroupAccess {
  static Communicator wrap(std::shared_ptr<Group> group) noexcept { return Communicator(std::move(group)); }
  static Group* get(const Communicator& c) noexcept { return c.group_.get(); }
};

/// The group behind `comm`; Error naming `operation` for a null or finalized communicator.
Group& group_of(const Communicator& comm, const char* operation);
/// The world group; Error before initialization.
Group& world_group(const char* operation);

/// check_rank's Error, for a rank outside the group (or its node).
[[noreturn]] void throw_rank_out_of_range(const Group& group, const char* operation, int rank, bool local,
                                          const char* what);

/// Throws Error when `rank` is not in [0, size) of the group (or of its ranks on this node),
/// naming the group: "rank 5 out of range for world size 4". `what` names the rank's role
/// ("root rank"); by default "rank", or "local rank".
/// Inline: a rank in range (every call with a root or a peer) costs two compares, no call.
inline void check_rank(const Group& group, const char* operation, int rank, bool local = false,
                       const char* what = nullptr) {
  const int size = local ? group.topology.local_size : group.topology.size;
  if (rank < 0 || rank >= size) throw_rank_out_of_range(group, operation, rank, local, what);
}

/// Marks `group` unusable because of `why` (the first failure wins: later ones keep its text).
/// Every later call on it, of any family, is an Error that names `why`.
void break_group(Group& group, const std::string& why) noexcept;

/// Builds a group on `owned` (collective over it) and registers it, so finalize() frees it.
std::shared_ptr<Group> make_group(MPI_Comm owned, std::string name);

/// A communicator of its own over `comm`'s ranks, in the same order, named "<comm's name>/<purpose>"
/// and with comm's timeout: for a library object whose collectives must never queue behind the
/// caller's on `comm`, nor the caller's behind its own (GradientBuckets). Collective over `comm`.
Communicator duplicate(const Communicator& comm, const std::string& purpose);

/// "group{0,2}" style list of ranks.
std::string rank_list(const std::vector<int>& ranks);

}  // namespace mpidist::detail
