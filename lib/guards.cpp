#include "mpidist/guards.hpp"

#include <string>

#include "context.hpp"
#include "mpi_check.hpp"
#include "mpidist/error.hpp"
#include "text_collectives.hpp"

namespace mpidist {
namespace {

// speechbrain keeps this counter global too: "am I inside main-only code" is a property of the
// process's control flow, not of an object.
int g_main_process_depth = 0;

}  // namespace

bool is_main_process() { return detail::context("is_main_process").topology.rank == 0; }

void barrier() {
  auto& ctx = detail::context("barrier");
  if (MainProcessContext::depth() > 0) return;
  MPIDIST_MPI_CHECK(MPI_Barrier(ctx.world));
}

MainProcessContext::MainProcessContext() noexcept { ++g_main_process_depth; }
MainProcessContext::~MainProcessContext() { --g_main_process_depth; }
int MainProcessContext::depth() noexcept { return g_main_process_depth; }

namespace detail {

std::string describe_exception(const std::exception_ptr& error) {
  constexpr std::size_t max_text = 4096;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return std::string(e.what()).substr(0, max_text);
  } catch (...) {
    return "exception of unknown type";
  }
}

void agree_on_outcome(const char* operation, std::exception_ptr local) {
  auto& ctx = context(operation);
  if (MainProcessContext::depth() > 0) {
    if (local) std::rethrow_exception(local);
    return;
  }
  const int size = ctx.topology.world_size;
  const int me = ctx.topology.rank;
  // The lowest failing rank (or `size` when all succeeded) reaches every rank; then its message.
  const int mine = local ? me : size;
  int first_failed = size;
  MPIDIST_MPI_CHECK(MPI_Allreduce(&mine, &first_failed, 1, MPI_INT, MPI_MIN, ctx.world));
  if (first_failed == size) return;
  std::string message = me == first_failed ? describe_exception(local) : "";
  broadcast_text(ctx.world, first_failed, message);
  throw Error(operation, "rank " + std::to_string(first_failed) + " failed: " + message);
}

void check_rank(const char* operation, int rank, bool local) {
  const auto& t = context(operation).topology;
  const int size = local ? t.local_size : t.world_size;
  if (rank < 0 || rank >= size)
    throw Error(operation, std::string(local ? "local rank " : "rank ") + std::to_string(rank) +
                               " out of range for " + (local ? "node size " : "world size ") +
                               std::to_string(size));
}

bool is_rank(int rank) { return context("one_rank_only").topology.rank == rank; }

}  // namespace detail

OneRankFirst::OneRankFirst(int rank, bool local)
    : first_(rank), local_(local), is_first_(false), uncaught_at_start_(std::uncaught_exceptions()) {
  const char* operation = "one_rank_first";
  detail::check_rank(operation, rank, local);
  auto& ctx = detail::context(operation);
  is_first_ = (local ? ctx.topology.local_rank : ctx.topology.rank) == rank;
  if (is_first_ || MainProcessContext::depth() > 0) return;
  // Wait for the first rank to leave its block, and learn whether it left by an exception.
  std::string failure;
  detail::broadcast_text(local ? ctx.local : ctx.world, rank, failure);
  if (!failure.empty())
    throw Error(operation, std::string(local ? "local rank " : "rank ") + std::to_string(rank) +
                               " failed inside the block that runs there first: " + failure);
}

OneRankFirst::~OneRankFirst() {
  if (!is_first_ || MainProcessContext::depth() > 0) return;
  auto* ctx = detail::context_if_initialized();
  if (ctx == nullptr) return;
  std::string failure = std::uncaught_exceptions() > uncaught_at_start_ ? "it left the block by an exception" : "";
  try {
    detail::broadcast_text(local_ ? ctx->local : ctx->world, first_, failure);
  } catch (const std::exception& e) {
    detail::abort_job(e.what());  // the waiting ranks cannot be released any other way
  }
}

}  // namespace mpidist
