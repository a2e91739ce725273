// Process groups: mpidist::Communicator, the value every collective, guard and object call can
// take first (torch `new_group`/`new_subgroups`, Horovod process sets, Boost.MPI communicators).
#pragma once

#include <mpi.h>

#include <initializer_list>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace mpidist {

namespace detail {
class Group;
struct GroupAccess;
}  // namespace detail

/// A cheap-to-copy handle (shared ownership) to one group of ranks. It owns a duplicate of its MPI
/// communicator and everything mpidist keeps per group: its topology (computed inside the group),
/// its NCCL communicator and stream (created at the first device collective), its pinned staging
/// memory and its collective sequence number. A default-constructed Communicator is null.
///
/// Lifetime: a group is freed when its last handle goes. Freeing is collective in principle
/// (MPI_Comm_free, NCCL teardown), so all members drop a group together, as with torch's
/// `destroy_process_group`. Groups still alive at finalize() are freed there; handles that outlive
/// finalize() are inert and raise Error when used.
class Communicator {
 public:
  /// The color that leaves a rank out of split(): it gets a null Communicator (MPI_UNDEFINED).
  static constexpr int undefined = MPI_UNDEFINED;

  /// A null communicator; passing it to any call is an Error.
  Communicator() noexcept = default;

  /// Wraps a communicator the application made (an MPI_Comm_split of its own, say): mpidist works
  /// on a duplicate of it and never frees `comm`. Collective over `comm`.
  static Communicator attach(MPI_Comm comm);

  explicit operator bool() const noexcept { return group_ != nullptr; }

  /// This rank within the group, and the group's size.
  int rank() const;
  int size() const;
  /// Rank among the group's ranks on this (possibly simulated) node, and how many there are.
  int local_rank() const;
  int local_size() const;
  /// Index of this rank's node among the group's nodes (ordered by their lowest group rank), and
  /// how many nodes the group spans.
  int node_rank() const;
  int num_nodes() const;
  /// Rank 0 of the group.
  bool is_main_process() const;
  /// The group's MPI communicator, for raw MPI calls beside mpidist's (owned by mpidist).
  MPI_Comm native() const;
  /// "world", "world/split(color 1)", "group{0,2}", "world/local(node 1)": shown in errors and logs.
  const std::string& name() const;
  /// The world rank of each of the group's ranks, in group order (torch `get_process_group_ranks`).
  const std::vector<int>& world_ranks() const;
  /// The world rank of the group's rank `rank` (torch `get_global_rank`); an Error out of range.
  int world_rank(int rank) const;
  /// The group rank of world rank `world_rank` (torch `get_group_rank`); an Error where that rank is
  /// no member of the group (or no rank of the world).
  int group_rank(int world_rank) const;
  /// How long a collective on this communicator may wait for the other ranks before the watchdog
  /// ends the job with a report (and a polled wait raises Error). Defaults to MPIDIST_TIMEOUT;
  /// zero waits forever. Applies to this rank's calls: set it alike on every rank.
  void set_timeout(std::chrono::duration<double> timeout) const;
  std::chrono::duration<double> timeout() const;

  /// Collective over the group, MPI_Comm_split semantics: ranks passing the same `color` form a
  /// group, ordered by `key` then by their rank here. `Communicator::undefined` gives a null result.
  Communicator split(int color, int key = 0) const;
  /// Collective over the group: the group's ranks on this rank's node.
  Communicator local() const;
  /// barrier(*this), as Boost.MPI's `world.barrier()`.
  void barrier() const;

  friend bool operator==(const Communicator& a, const Communicator& b) noexcept { return a.group_ == b.group_; }

 private:
  friend struct detail::GroupAccess;
  explicit Communicator(std::shared_ptr<detail::Group> group) noexcept : group_(std::move(group)) {}
  std::shared_ptr<detail::Group> group_;
};

/// The library's world: every rank of the job (a duplicate of the communicator mpidist was given).
Communicator world();

/// torch `new_group`: collective over the world. The members, given by world rank, form a group
/// ordered by world rank; other ranks get a null Communicator. Duplicate or out-of-range ranks are
/// an Error on every rank.
Communicator new_group(std::span<const int> world_ranks);
Communicator new_group(std::initializer_list<int> world_ranks);

/// torch's names for the translations above: `comm.world_rank(rank)`, `comm.group_rank(world_rank)`
/// and `comm.world_ranks()`. Local: no message.
inline int get_global_rank(const Communicator& comm, int group_rank) { return comm.world_rank(group_rank); }
inline int get_group_rank(const Communicator& comm, int global_rank) { return comm.group_rank(global_rank); }
inline std::vector<int> get_process_group_ranks(const Communicator& comm) { return comm.world_ranks(); }

/// torch `new_subgroups`: collective over the world, which is cut into groups of `group_size`
/// consecutive ranks; returns this rank's. The world size must be a multiple of `group_size`.
Communicator new_subgroups(int group_size);

}  // namespace mpidist
