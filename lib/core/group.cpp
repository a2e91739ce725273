// Making and freeing a Group (a communicator's state), breaking it, and rank checks.
#include "core/group.hpp"

#include <array>

#include "core/async_lane.hpp"
#include "core/context.hpp"
#include "core/mpi_check.hpp"
#include "core/same_everywhere.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace {

void free_comm(MPI_Comm& comm) noexcept {
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
}

// The library's communicators report errors as return codes, which MPIDIST_MPI_CHECK turns into
// Error; MPI's default would abort the job without a word about which call failed.
void return_errors(MPI_Comm comm) { MPIDIST_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)); }

}  // namespace

Group::Group(MPI_Comm owned, std::string group_name, int world_rank, int node, std::uint64_t serial)
    : comm(owned), name(std::move(group_name)) {
  try {
    return_errors(comm);
    MPIDIST_MPI_CHECK(MPI_Comm_dup(comm, &control));
    return_errors(control);
    auto& t = topology;
    MPIDIST_MPI_CHECK(MPI_Comm_rank(comm, &t.rank));
    MPIDIST_MPI_CHECK(MPI_Comm_size(comm, &t.size));
    MPIDIST_MPI_CHECK(MPI_Comm_split(comm, node, t.rank, &local));
    return_errors(local);
    MPIDIST_MPI_CHECK(MPI_Comm_rank(local, &t.local_rank));
    MPIDIST_MPI_CHECK(MPI_Comm_size(local, &t.local_size));
    // Nodes are numbered by their leaders' order in the group, so node 0 holds group rank 0.
    MPIDIST_MPI_CHECK(MPI_Comm_split(comm, t.local_rank == 0 ? 0 : MPI_UNDEFINED, t.rank, &leaders));
    std::array<int, 2> where{0, 0};  // node rank, node count
    if (leaders != MPI_COMM_NULL) {
      return_errors(leaders);
      MPIDIST_MPI_CHECK(MPI_Comm_rank(leaders, &where[0]));
      MPIDIST_MPI_CHECK(MPI_Comm_size(leaders, &where[1]));
    }
    MPIDIST_MPI_CHECK(MPI_Bcast(where.data(), 2, MPI_INT, 0, local));
    t.node_rank = where[0];
    t.num_nodes = where[1];
    void* tag_ub = nullptr;
    int found = 0;
    MPIDIST_MPI_CHECK(MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found));
    if (found) tag_upper_bound = *static_cast<int*>(tag_ub);
    world_ranks.resize(static_cast<std::size_t>(t.size));
    MPIDIST_MPI_CHECK(MPI_Allgather(&world_rank, 1, MPI_INT, world_ranks.data(), 1, MPI_INT, control));
    // The identity the watchdog and the trace use across ranks: name, members and the members'
    // largest serial (two groups of the same members made one after the other differ in it).
    auto largest = static_cast<unsigned long long>(serial);
    MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, control));
    key = fnv1a(name + rank_list(world_ranks) + "#" + std::to_string(largest)) | 1u;  // never 0: 0 marks a free slot
  } catch (...) {
    release();
    throw;
  }
}

Group::~Group() { release(); }

void Group::release() noexcept {
  if (Context* ctx = context_if_initialized(); ctx != nullptr && !released()) unwatch_group(*ctx, key);
  // Queued collectives finish first: they use the segment and the communicators freed below.
  if (lane) {
    lane->stop();
    lane.reset();
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Device resources first: their deleters may still need the group (NCCL teardown).
  nccl.reset();
  staging.reset();
  fusion.reset();
  device_p2p.reset();
  p2p_types.reset();  // MPI_Type_free, while MPI lives
  shm.reset();  // MPI_Win_free: collective over `local`, before it goes
  if (finalized) {  // MPI took the communicators with it
    comm = control = local = leaders = across = MPI_COMM_NULL;
    return;
  }
  free_comm(across);
  free_comm(leaders);
  free_comm(local);
  free_comm(control);
  free_comm(comm);
}

Group& group_of(const Communicator& comm, const char* operation) {
  Group* group = GroupAccess::get(comm);
  if (group == nullptr) throw Error(operation, "was given a null Communicator (a rank outside the group, or default-constructed)");
  if (group->released())
    throw Error(operation, "the communicator '" + group->name + "' was freed by finalize(); it cannot be used any more");
  return *group;
}

void break_group(Group& group, const std::string& why) noexcept {
  std::lock_guard lock(group.broken_mutex);
  if (group.is_broken()) return;  // the first failure wins
  try {
    group.broken = why;
    // finalize() ends the job for it, even after the group was freed: the others may still wait.
    if (Context* ctx = context_if_initialized(); ctx != nullptr && ctx->first_break.empty())
      ctx->first_break = "communicator " + group.name + " broke: " + why;
  } catch (...) {  // out of memory for the text: still broken
    group.broken = "?";
  }
  group.broken_flag.store(true, std::memory_order_release);
}

Group& world_group(const char* operation) { return *context(operation).world; }

std::shared_ptr<Group> make_group(MPI_Comm owned, std::string name) {
  auto& ctx = context("new group");
  auto group = std::make_shared<Group>(owned, std::move(name), ctx.topology.rank, ctx.topology.node_rank, ++ctx.groups_made);
  watch_group(ctx, *group);
  std::erase_if(ctx.groups, [](const std::weak_ptr<Group>& g) { return g.expired(); });
  ctx.groups.push_back(group);
  return group;
}

void throw_rank_out_of_range(const Group& group, const char* operation, int rank, bool local, const char* what) {
  const auto& t = group.topology;
  const int size = local ? t.local_size : t.size;
  if (what == nullptr) what = local ? "local rank" : "rank";
  throw Error(group.name, operation,
              std::string(what) + " " + std::to_string(rank) + " out of range for " +
                  (local ? "node size " : group.name == "world" ? "world size " : "group size ") +
                  std::to_string(size));
}

std::string rank_list(const std::vector<int>& ranks) {
  // Names stay short for large groups: the first ranks, then the last and the count.
  constexpr std::size_t shown = 8;
  std::string text = "{";
  for (std::size_t i = 0; i < ranks.size() && i < shown; ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > shown)
    text += ",...," + std::to_string(ranks.back()) + "} (" + std::to_string(ranks.size()) + " ranks)";
  else
    text += "}";
  return text;
}

}  // namespace mpidist::detail
