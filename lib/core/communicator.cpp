// Making groups: world(), split(), local(), new_group(), new_subgroups(), attach().
#include "mpidist/communicator.hpp"

#include <algorithm>
#include <string>

#include "core/context.hpp"
#include "core/mpi_check.hpp"
#include "core/same_everywhere.hpp"
#include "core/seconds_text.hpp"
#include "mpidist/error.hpp"

namespace mpidist {
namespace detail {
namespace {

// Collective over `parent`: the MPI split and the group built on it. No NCCL communicator: the
// child makes its own at its first device collective (start_nccl), so a group that never touches
// device memory costs NCCL nothing, and a failure of the child's never breaks the parent's.
Communicator split_group(Group& parent, int color, int key, std::string name) {
  MPI_Comm piece = MPI_COMM_NULL;
  MPIDIST_MPI_CHECK(MPI_Comm_split(parent.control, color, key, &piece));
  std::shared_ptr<Group> child;
  if (piece != MPI_COMM_NULL) child = make_group(piece, std::move(name));
  return GroupAccess::wrap(std::move(child));
}

// Every rank must pass the same list: a cheap hash comparison first, the lists only on failure.
void check_same_members(Group& world, const char* operation, const std::vector<int>& members) {
  const std::string_view bytes(reinterpret_cast<const char*>(members.data()), members.size() * sizeof(int));
  if (!extremes_across_ranks(world.control, fnv1a(bytes)).same())
    throw Error(operation, "ranks passed different member lists (this rank: " + rank_list(members) + ")");
}

}  // namespace

Communicator duplicate(const Communicator& comm, const std::string& purpose) {
  Group& parent = group_of(comm, purpose.c_str());
  MPI_Comm copy = MPI_COMM_NULL;
  MPIDIST_MPI_CHECK(MPI_Comm_dup(parent.control, &copy));
  auto child = make_group(copy, parent.name + "/" + purpose);
  child->timeout_seconds = parent.timeout_seconds;
  return GroupAccess::wrap(std::move(child));
}

}  // namespace detail

using detail::group_of;

int Communicator::rank() const { return group_of(*this, "Communicator::rank").topology.rank; }
int Communicator::size() const { return group_of(*this, "Communicator::size").topology.size; }
int Communicator::local_rank() const { return group_of(*this, "Communicator::local_rank").topology.local_rank; }
int Communicator::local_size() const { return group_of(*this, "Communicator::local_size").topology.local_size; }
int Communicator::node_rank() const { return group_of(*this, "Communicator::node_rank").topology.node_rank; }
int Communicator::num_nodes() const { return group_of(*this, "Communicator::num_nodes").topology.num_nodes; }
bool Communicator::is_main_process() const { return group_of(*this, "Communicator::is_main_process").topology.rank == 0; }
MPI_Comm Communicator::native() const { return group_of(*this, "Communicator::native").comm; }
const std::string& Communicator::name() const { return group_of(*this, "Communicator::name").name; }
const std::vector<int>& Communicator::world_ranks() const { return group_of(*this, "Communicator::world_ranks").world_ranks; }

int Communicator::world_rank(int rank) const {
  const auto& group = group_of(*this, "Communicator::world_rank");
  if (rank < 0 || rank >= group.topology.size)
    throw Error(group.name, "Communicator::world_rank", "rank " + std::to_string(rank) + " is out of range for a group of " +
                                                          std::to_string(group.topology.size) + " ranks (0 to " +
                                                          std::to_string(group.topology.size - 1) + ")");
  return group.world_ranks[static_cast<std::size_t>(rank)];
}

int Communicator::group_rank(int world_rank) const {
  const auto& group = group_of(*this, "Communicator::group_rank");
  const auto at = std::find(group.world_ranks.begin(), group.world_ranks.end(), world_rank);
  if (at == group.world_ranks.end())
    throw Error(group.name, "Communicator::group_rank", "world rank " + std::to_string(world_rank) +
                                                           " is no member of the group (its world ranks: " +
                                                           detail::rank_list(group.world_ranks) + ")");
  return static_cast<int>(at - group.world_ranks.begin());
}

Communicator Communicator::split(int color, int key) const {
  auto& parent = group_of(*this, "Communicator::split");
  if (color < 0 && color != undefined)
    throw Error("Communicator::split", "color " + std::to_string(color) + " on '" + parent.name +
                                           "' must be >= 0 or Communicator::undefined");
  return detail::split_group(parent, color, key, parent.name + "/split(color " + std::to_string(color) + ")");
}

Communicator Communicator::local() const {
  auto& parent = group_of(*this, "Communicator::local");
  MPI_Comm piece = MPI_COMM_NULL;
  MPIDIST_MPI_CHECK(MPI_Comm_dup(parent.local, &piece));
  return detail::GroupAccess::wrap(
      detail::make_group(piece, parent.name + "/local(node " + std::to_string(parent.topology.node_rank) + ")"));
}

Communicator Communicator::attach(MPI_Comm comm) {
  const char* operation = "Communicator::attach";
  detail::context(operation);
  if (comm == MPI_COMM_NULL) throw Error(operation, "was given MPI_COMM_NULL");
  MPI_Comm copy = MPI_COMM_NULL;
  MPIDIST_MPI_CHECK(MPI_Comm_dup(comm, &copy));  // the application's communicator stays its own
  auto group = detail::make_group(copy, "attached");
  group->name = "attached" + detail::rank_list(group->world_ranks);
  return detail::GroupAccess::wrap(std::move(group));
}

Communicator world() { return detail::GroupAccess::wrap(detail::context("world").world); }

Communicator new_group(std::span<const int> world_ranks) {
  const char* operation = "new_group";
  auto& world = detail::world_group(operation);
  std::vector<int> members(world_ranks.begin(), world_ranks.end());
  std::sort(members.begin(), members.end());
  // Every rank sees the same list, so every rank raises the same Error, before any communication.
  for (const int r : members)
    if (r < 0 || r >= world.topology.size)
      throw Error(operation, "rank " + std::to_string(r) + " out of range for world size " +
                                 std::to_string(world.topology.size));
  if (const auto twice = std::adjacent_find(members.begin(), members.end()); twice != members.end())
    throw Error(operation, "rank " + std::to_string(*twice) + " is listed twice");
  if (members.empty()) throw Error(operation, "needs at least one rank");
  detail::check_same_members(world, operation, members);
  const bool member = std::binary_search(members.begin(), members.end(), world.topology.rank);
  return detail::split_group(world, member ? 0 : Communicator::undefined, world.topology.rank,
                             "group" + detail::rank_list(members));
}

Communicator new_group(std::initializer_list<int> world_ranks) {
  return new_group(std::span<const int>(world_ranks.begin(), world_ranks.size()));
}

Communicator new_subgroups(int group_size) {
  const char* operation = "new_subgroups";
  auto& world = detail::world_group(operation);
  const int size = world.topology.size;
  if (group_size < 1 || size % group_size != 0)
    throw Error(operation, "group size " + std::to_string(group_size) + " must be positive and divide the world size " +
                               std::to_string(size));
  const int first = world.topology.rank / group_size * group_size;
  std::vector<int> members;
  for (int r = first; r < first + group_size; ++r) members.push_back(r);
  return detail::split_group(world, first / group_size, world.topology.rank, "group" + detail::rank_list(members));
}

}  // namespace mpidist

namespace mpidist {

void Communicator::set_timeout(std::chrono::duration<double> timeout) const {
  auto& group = detail::group_of(*this, "set_timeout");
  if (!(timeout.count() >= 0.0)) {
    throw Error(group.name, "set_timeout", "timeout must be >= 0 s (0: no limit), got " + detail::seconds_text(timeout.count()));
  }
  group.timeout_seconds = timeout.count();
}

std::chrono::duration<double> Communicator::timeout() const {
  auto& group = detail::group_of(*this, "timeout");
  return std::chrono::duration<double>(group.timeout_seconds >= 0 ? group.timeout_seconds
                                                                   : detail::settings("timeout").timeout_seconds);
}

}  // namespace mpidist
