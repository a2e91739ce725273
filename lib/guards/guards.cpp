// barrier, is_main_process, MainProcessContext, and the agreements behind the main-process guards.
#include "mpidist/guards.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/context.hpp"
#include "core/mpi_check.hpp"
#include "core/outcome.hpp"
#include "core/text_collectives.hpp"
#include "watch/agreement.hpp"
#include "watch/call_scope.hpp"
#include "mpidist/error.hpp"
#include "mpidist/topology.hpp"

namespace mpidist {
namespace {

// speechbrain keeps this counter global; per thread it is exact: "am I inside main-only code" is
// a property of a thread's control flow, and another thread's collectives must not turn local.
// initial-exec: every collective reads it; one instruction instead of a __tls_get_addr call.
[[gnu::tls_model("initial-exec")]] thread_local int t_main_process_depth = 0;

}  // namespace

bool is_main_process() { return detail::world_group("is_main_process").topology.rank == 0; }
bool is_local_main_process() { return local_rank() == 0; }

void barrier() { barrier(world()); }

void barrier(const Communicator& comm) {
  auto& group = detail::group_of(comm, "barrier");
  if (MainProcessContext::depth() > 0) return;
  detail::CallScope scope(group, detail::Fingerprint{"barrier"});
  MPIDIST_MPI_CHECK(MPI_Barrier(group.comm));
}

void Communicator::barrier() const { mpidist::barrier(*this); }

MainProcessContext::MainProcessContext() noexcept { ++t_main_process_depth; }
MainProcessContext::~MainProcessContext() { --t_main_process_depth; }
int MainProcessContext::depth() noexcept { return t_main_process_depth; }

namespace detail {

std::string describe_exception(const std::exception_ptr& error) {
  constexpr std::size_t max_text = 4096;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    // Without the rank prefix of what(): the text is read after "rank N failed: ".
    const std::string on = e.communicator().empty() ? "" : " on " + e.communicator();
    return (e.operation() + on + ": " + e.detail()).substr(0, max_text);
  } catch (const std::exception& e) {
    return std::string(e.what()).substr(0, max_text);
  } catch (...) {
    return "exception of unknown type";
  }
}

// The library's own agreement on an outcome, over a group's control channel as one numbered call;
// local inside a MainProcessContext.
void agree_on_outcome(Group& group, const char* operation, std::exception_ptr local) {
  if (MainProcessContext::depth() > 0) {
    if (local) std::rethrow_exception(local);
    return;
  }
  const Fingerprint call{operation};
  CallScope scope(group, call);
  CallRecord mine(operation, group.sequence);
  mine[CallRecord::Failed] = local ? 1 : 0;
  if (agree_on_record(group, call, mine).any_failed()) throw_agreed_failure(group, operation, local);
}

// The first rank's way out of its block and the others' wait for it meet here: one call of the
// group, numbered and watched like any other; an agreement under the group's deadline (for
// `local`, a broadcast among the node's ranks, which the watchdog watches). Returns the first
// rank's failure text, "" when its block succeeded.
std::string meet_first(Group& group, const char* operation, int first, bool local, std::string failure) {
  const Fingerprint call{operation, 0, 0, -1, first, -1, nullptr, 0, true};
  CallScope scope(group, call);
  if (local) {
    broadcast_text(group.local, first, failure);
    return failure;
  }
  CallRecord mine(operation, group.sequence);
  mine[CallRecord::Failed] = failure.empty() ? 0 : 1;
  mine[CallRecord::Root] = first;
  const std::string waiting_for = "rank " + std::to_string(first) + " to finish the block that runs there first";
  if (agree_on_record(group, call, mine, waiting_for.c_str()).any_failed()) broadcast_text(group.control, first, failure);
  return failure;
}

void agree_on_outcome(const Communicator& comm, const char* operation, std::exception_ptr local) {
  agree_on_outcome(group_of(comm, operation), operation, local);
}

void agree_on_outcome(const char* operation, std::exception_ptr local) {
  agree_on_outcome(world_group(operation), operation, local);
}

int rank_in(const Communicator& comm, const char* operation) { return group_of(comm, operation).topology.rank; }

void check_rank(const Communicator& comm, const char* operation, int rank, bool local) {
  check_rank(group_of(comm, operation), operation, rank, local);
}

// A local rank must exist on every node of the group, else the nodes without it would wait for
// nobody while its own node goes on: checked against the group's smallest node, from the job's
// placement table (alike on every rank, so every rank raises the same Error and stays in step).
namespace {
void check_local_rank_everywhere(const Group& group, const char* operation, int rank) {
  if (rank < 0) check_rank(group, operation, rank, true);
  const auto& placement = context(operation).topology.ranks;
  const auto place = [&](int world_rank) -> const RankPlacement& { return placement[static_cast<std::size_t>(world_rank)]; };
  std::map<int, int> ranks_on_node;  // the world's node index -> the group's ranks there
  for (const int world_rank : group.world_ranks) ++ranks_on_node[place(world_rank).node_rank];
  for (const auto& entry : ranks_on_node) {  // not a structured binding: clang 14 cannot capture one
    const int node = entry.first, count = entry.second;
    if (rank < count) continue;
    const int member = *std::find_if(group.world_ranks.begin(), group.world_ranks.end(),
                                     [&](int w) { return place(w).node_rank == node; });
    throw Error(group.name, operation,
                "local rank " + std::to_string(rank) + " is missing on node " + std::to_string(node) + " (" +
                    place(member).hostname + "), which holds " + std::to_string(count) +
                    (count == 1 ? " rank" : " ranks") + " of " + group.name +
                    ": with local = true the rank must exist on every node");
  }
}
}  // namespace

}  // namespace detail

OneRankFirst::OneRankFirst(int rank, bool local) : OneRankFirst(world(), rank, local) {}

OneRankFirst::OneRankFirst(Communicator comm, int rank, bool local)
    : comm_(std::move(comm)), first_(rank), local_(local), is_first_(false),
      uncaught_at_start_(std::uncaught_exceptions()) {
  const char* operation = "one_rank_first";
  auto& group = detail::group_of(comm_, operation);
  if (local)
    detail::check_local_rank_everywhere(group, operation, rank);
  else
    detail::check_rank(group, operation, rank);
  is_first_ = (local ? group.topology.local_rank : group.topology.rank) == rank;
  if (is_first_ || MainProcessContext::depth() > 0) return;
  // Wait for the first rank to leave its block, and learn whether it left by an exception.
  const std::string failure = detail::meet_first(group, operation, rank, local, "");
  if (!failure.empty())
    throw Error(group.name, operation,
                std::string(local ? "local rank " : "rank ") + std::to_string(rank) +
                    " failed inside the block that runs there first: " + failure);
}

void OneRankFirst::failed_with(const std::exception_ptr& error) noexcept {
  try {
    failure_ = detail::describe_exception(error);
  } catch (...) {
    failure_ = "it left the block by an exception";
  }
}

OneRankFirst::~OneRankFirst() {
  if (!is_first_ || MainProcessContext::depth() > 0) return;
  auto* group = detail::GroupAccess::get(comm_);
  if (detail::context_if_initialized() == nullptr || group == nullptr || group->released()) return;
  try {
    std::string failure = failure_;
    if (failure.empty() && std::uncaught_exceptions() > uncaught_at_start_) failure = "it left the block by an exception";
    detail::meet_first(*group, "one_rank_first", first_, local_, std::move(failure));
  } catch (const std::exception& e) {
    detail::abort_job(e.what());  // the waiting ranks cannot be released any other way
  }
}

}  // namespace mpidist
