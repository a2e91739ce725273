// initialize() and finalize(): MPI start-up or adoption, the world group, and everything that watches it.
#include "mpidist/environment.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include <sys/stat.h>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/mpi_check.hpp"
#include "core/rank_prefix.hpp"
#include "mpi/copy_mechanism.hpp"
#include "watch/call_scope.hpp"
#include "watch/fatal_signals.hpp"
#include "watch/final_check.hpp"
#include "watch/unreceived_messages.hpp"
#include "watch/job_end.hpp"
#include "watch/progress_board.hpp"
#include "watch/refusal_notices.hpp"
#include "watch/remote_progress.hpp"
#include "watch/watchdog.hpp"
#include "mpidist/error.hpp"

namespace mpidist {
namespace detail {
namespace {

std::unique_ptr<Context> g_context;
// At an exit without finalize() (MPI_Abort: MPICH's calls exit(); an MPI's own fatal-error handler)
// the Context is left to the operating system: freeing its MPI objects then would call into an MPI
// that is going down (MPICH's UCX asserts). Defined after g_context, so destroyed before it.
struct LeaveContextAtExit {
  ~LeaveContextAtExit() { (void)g_context.release(); }
} g_leave_context_at_exit;
std::terminate_handler g_previous_terminate = nullptr;

// An exception nobody catches ends in std::terminate without unwinding; by then the other ranks
// may already sit in a collective. Name the rank and what was thrown, then take the job down.
[[noreturn]] void terminate_with_abort() noexcept {
  std::string message = "terminate called";
  if (auto error = std::current_exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message = std::string("uncaught exception: ") + e.what();
    } catch (...) {
      message = "uncaught exception of unknown type";
    }
  }
  abort_job(message.c_str());
}

void start_watching(Context& ctx);

void start(int* argc, char*** argv, ThreadLevel level, MPI_Comm adopt) {
  if (g_context) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw Error("initialize", "MPI was already finalized; it cannot be started again");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && adopt != MPI_COMM_NULL)
    throw Error("initialize", "was given a communicator but MPI is not initialized");
  // From here an uncaught Error (a setting the ranks disagree on) ends the job as any uncaught
  // exception after initialization does: named, with MPI_Abort, not std::terminate's core dump.
  if (std::get_terminate() != terminate_with_abort) g_previous_terminate = std::set_terminate(terminate_with_abort);

  auto ctx = std::make_unique<Context>();
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, static_cast<int>(level), &provided) != MPI_SUCCESS)
      throw Error("initialize", "MPI_Init_thread failed");
    ctx->owns_mpi = true;
  }
  // The library talks on its own duplicate, so its messages never match the application's.
  // MPI_COMM_WORLD appears only here, at the public edge, when no communicator was given.
  const MPI_Comm base = adopt == MPI_COMM_NULL ? MPI_COMM_WORLD : adopt;
  MPI_Comm world = MPI_COMM_NULL;
  MPIDIST_MPI_CHECK(MPI_Comm_dup(base, &world));
  MPIDIST_MPI_CHECK(MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN));
  int rank = 0;
  MPIDIST_MPI_CHECK(MPI_Comm_rank(world, &rank));
  try {
    ctx->world = std::make_shared<Group>(world, "world", rank, node_color(world, rank));
  } catch (...) {
    MPI_Comm_free(&world);
    throw;
  }
  // Settings are agreed before anything depends on them; a disagreement is an Error everywhere.
  ctx->settings = agree_on_settings(ctx->world->control, mpi::may_copy_large_messages_once());
  discover_topology(*ctx);
  // Before any CUDA call that needs a context: this rank's device, never device 0 by default.
  make_rank_device_current(ctx->topology.local_rank);
  MPIDIST_MPI_CHECK(MPI_Query_thread(&ctx->thread_level));
  ctx->init_thread = this_thread_token();
  start_watching(*ctx);
  g_context = std::move(ctx);
  install_signal_handlers();
}

// The flight recorder and the watchdog (watchdog.hpp): collective over the world.
void start_watching(Context& ctx) {
  const auto& s = ctx.settings;
  if (!s.trace_dir.empty()) ::mkdir(s.trace_dir.c_str(), 0700);  // the user's choice; kept private when made here
  ctx.board = std::make_unique<ProgressBoard>(ctx.world->control, ctx.topology.rank, s.trace_entries,
                                              ctx.topology.hostname.c_str());
  ctx.recorder = std::make_unique<FlightRecorder>(ctx.board->mine(), ctx.topology.world_size, s.trace_dir);
  ctx.remote = std::make_unique<RemoteProgress>(ctx.world->control, ctx.thread_level, ctx.topology, *ctx.board);
  ctx.notices = std::make_unique<RefusalNotices>(ctx.world->control);
  watch_group(ctx, *ctx.world);
  ctx.watchdog = std::make_unique<Watchdog>(ctx, s.stall_warn_seconds);
}

}  // namespace

Context& context(const char* operation) {
  if (!g_context)
    throw Error(operation, "mpidist is not initialized: create an mpidist::Environment (or call "
                           "mpidist::initialize()) first");
  return *g_context;
}

Context* context_if_initialized() noexcept { return g_context.get(); }

void at_finalize(std::function<void()> cleanup) { context("at_finalize").finalizers.push_back(std::move(cleanup)); }

void abort_job(const char* message) noexcept {
  const bool dumped = g_context && g_context->recorder && g_context->recorder->dump("error", message);
  std::fprintf(stderr, "mpidist: %s%s; aborting the job so that the other ranks do not hang%s%s\n",
               rank_prefix().c_str(), message, dumped ? "; flight recorder: " : "",
               dumped ? g_context->recorder->dump_path().c_str() : "");
  std::fflush(stderr);
  if (g_context && g_context->recorder) g_context->recorder->record().header.reported.store(1);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    const MPI_Comm comm = g_context && !g_context->world->released() ? g_context->world->comm : MPI_COMM_WORLD;
    if (g_context) end_job_after_report(*g_context, comm, true);
    MPI_Abort(comm, 1);
  }
  std::abort();
}

}  // namespace detail

Environment::Environment(ThreadLevel level) : uncaught_at_start_(std::uncaught_exceptions()), owns_(!is_initialized()) {
  detail::start(nullptr, nullptr, level, MPI_COMM_NULL);
}

Environment::Environment(int& argc, char**& argv, ThreadLevel level)
    : uncaught_at_start_(std::uncaught_exceptions()), owns_(!is_initialized()) {
  detail::start(&argc, &argv, level, MPI_COMM_NULL);
}

Environment::Environment(MPI_Comm comm) : uncaught_at_start_(std::uncaught_exceptions()), owns_(!is_initialized()) {
  if (comm == MPI_COMM_NULL) throw Error("Environment", "was given MPI_COMM_NULL");
  detail::start(nullptr, nullptr, ThreadLevel::Funneled, comm);
}

Environment::~Environment() {
  // Leaving this scope by an exception means this rank stops taking part in collectives.
  if (std::uncaught_exceptions() > uncaught_at_start_)
    detail::abort_job("an exception is leaving the scope of mpidist::Environment");
  if (owns_) finalize();
}

void initialize(ThreadLevel level) { detail::start(nullptr, nullptr, level, MPI_COMM_NULL); }
void initialize(int& argc, char**& argv, ThreadLevel level) { detail::start(&argc, &argv, level, MPI_COMM_NULL); }
void initialize(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) throw Error("initialize", "was given MPI_COMM_NULL");
  detail::start(nullptr, nullptr, ThreadLevel::Funneled, comm);
}

void finalize() {
  auto& ctx = detail::g_context;
  if (!ctx) return;
  if (ctx->topology.world_size > 1 && (ctx->timed_out.load() || ctx->world->is_broken())) {
    // A wait gave up (its operation is still pending in MPI) or the world left step: MPI_Finalize
    // could wait for ranks that never come, and the final check would compare ranks that parted
    // knowingly. The job has failed already; it ends now, saying why.
    std::string why = ctx->timed_out.load() ? "a collective was left unfinished earlier in this job" : "";
    if (!ctx->first_break.empty()) why += (why.empty() ? "" : "; ") + ctx->first_break;
    detail::abort_job(("finalize: " + why + "; with the ranks out of step, MPI_Finalize could wait for ranks that "
                       "never arrive").c_str());
  }
  // Under the watchdog: a rank that skipped a collective, or made another, is named here.
  detail::check_at_finalize(*ctx);
  detail::report_unreceived_messages(*ctx);
  ctx->watchdog->stop();
  ctx->remote->release();
  ctx->notices->release();
  ctx->recorder->record().header.finished.store(1);
  // Groups first (their NCCL communicators and staging memory), the world last; handles the
  // application still holds become inert.
  for (auto& weak : ctx->groups)
    if (auto group = weak.lock()) group->release();
  ctx->world->release();
  ctx->board->release();
  ctx->recorder->rebind(ctx->board->mine());
  for (auto it = ctx->finalizers.rbegin(); it != ctx->finalizers.rend(); ++it) {
    try {
      (*it)();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mpidist: %sfinalize: cleanup failed: %s\n", detail::rank_prefix().c_str(), e.what());
    }
  }
  const bool owns_mpi = ctx->owns_mpi;
  detail::remove_signal_handlers();
  ctx.reset();
  std::set_terminate(detail::g_previous_terminate);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi && !finalized) MPI_Finalize();
}

void sync() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    detail::remove_signal_handlers();
    detail::g_context.reset();  // its communicators died with MPI (Group::release knows)
    std::set_terminate(detail::g_previous_terminate);
  } else if (initialized && !detail::g_context) {
    detail::start(nullptr, nullptr, ThreadLevel::Funneled, MPI_COMM_NULL);
  }
}

bool is_initialized() noexcept { return detail::g_context != nullptr; }

bool is_distributed() { return detail::context("is_distributed").topology.world_size > 1; }

MPI_Comm communicator() { return detail::context("communicator").world->comm; }

}  // namespace mpidist
