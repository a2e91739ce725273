// Ending the job after a rank said why, host peers' reports first.
#include "watch/job_end.hpp"

#include <signal.h>

#include <ctime>

#include "mpi/abort.hpp"
#include "watch/flight_recorder.hpp"
#include "watch/peer_view.hpp"
#include "watch/progress_board.hpp"
#include "watch/progress_record.hpp"
#include "watch/watchdog.hpp"

namespace mpidist::detail {
namespace {

// A rank's watchdog acts a second past its call's timeout and looks ten times a second
// (watchdog.cpp); the rest is slack for a loaded machine.
constexpr std::int64_t watchdog_lag_ns = 1'500'000'000;
// The longest this rank waits for the others' reports, and then for their answers to SIGTERM: the
// job still ends within its timeout + 5 s.
constexpr std::int64_t longest_wait_ns = 2'000'000'000;
constexpr std::int64_t answer_wait_ns = 1'000'000'000;

// Whether `peer` is about to print a report of its own: it is printing one, or it waits in a
// collective whose timeout it acts on before `horizon`.
bool report_due(const RankRecord& peer, std::int64_t horizon) noexcept {
  const auto& h = peer.header;
  if (h.finished.load() != 0 || !process_alive(h.pid.load())) return false;
  const auto reported = h.reported.load(std::memory_order_acquire);
  if (reported == report_out) return false;
  if (reported != 0) return true;
  const auto call = read_entry(peer, h.current.load(std::memory_order_acquire));
  if (!call.valid) {
    // Between calls, just out of one that failed: it is handling the Error (a log line, a
    // checkpoint) and about to end the job itself at finalize(); SIGTERM would cut it short.
    const auto last = read_entry(peer, h.last_done.load(std::memory_order_acquire));
    return last.valid && last.state == CallState::Failed && steady_now_ns() - last.end_ns < longest_wait_ns;
  }
  if (call.state != CallState::Started || call.timeout_seconds <= 0) return false;
  return call.start_ns + static_cast<std::int64_t>(call.timeout_seconds * 1e9) + watchdog_lag_ns <= horizon;
}

// The live ranks of this host, other than this one, that have not said their part yet.
template <class F>
void for_each_silent_peer(const Context& ctx, F&& f) noexcept {
  for (const int rank : ctx.board->host_ranks()) {
    const RankRecord* peer = rank == ctx.topology.rank ? nullptr : ctx.board->peer(rank);
    if (peer == nullptr) continue;
    const auto& h = peer->header;
    if (h.finished.load() == 0 && h.reported.load(std::memory_order_acquire) != report_out && process_alive(h.pid.load()))
      f(*peer);
  }
}

// Other hosts' watchdogs, reporting the same call at the same moment, ask this host meanwhile:
// this thread is its rank's watchdog, which answers them (remote_progress.hpp).
void pause_briefly(const Context& ctx) noexcept {
  if (ctx.remote) ctx.remote->serve(steady_now_ns());
  timespec step{0, 10'000'000};
  ::nanosleep(&step, nullptr);
}

// Pauses with `pause` while a live rank of this host has not said its part, for at most the time
// the rank ending the job gives the ranks it sent SIGTERM.
template <class Pause>
void await_answers(const Context& ctx, Pause&& pause) noexcept {
  const std::int64_t answered = steady_now_ns() + answer_wait_ns;
  for (bool silent = true; silent && steady_now_ns() < answered;) {
    silent = false;
    for_each_silent_peer(ctx, [&](const RankRecord&) { silent = true; });
    if (silent) pause();
  }
}

void await_host_reports(const Context& ctx) noexcept {
  if (!ctx.board) return;
  // First the ranks about to report on their own (a wait of theirs times out too).
  const std::int64_t horizon = steady_now_ns() + longest_wait_ns;
  for (bool due = true; due && steady_now_ns() < horizon;) {
    due = false;
    for_each_silent_peer(ctx, [&](const RankRecord& peer) { due = due || report_due(peer, horizon); });
    if (due) pause_briefly(ctx);
  }
  // Then the rest: SIGTERM, which each answers with what it is in and a dump before it dies.
  for_each_silent_peer(ctx, [](const RankRecord& peer) { ::kill(static_cast<pid_t>(peer.header.pid.load()), SIGTERM); });
  await_answers(ctx, [&] { pause_briefly(ctx); });
}

}  // namespace

void await_host_peers_answers(const Context& ctx) noexcept {
  if (!ctx.board) return;
  // In a signal handler: no serving of queries, only a plain sleep.
  await_answers(ctx, [] {
    timespec step{0, 5'000'000};
    ::nanosleep(&step, nullptr);
  });
}

void end_job_after_report(Context& ctx, MPI_Comm comm, bool mpi_thread, const ReportsElsewhere& elsewhere) noexcept {
  // The host peers wait for this rank's report (await_host_reports) while it answers the others'.
  if (ctx.remote)
    ctx.remote->answer_until(elsewhere.asked_before, elsewhere.ranks, steady_now_ns() + watchdog_lag_ns);
  // Ours is out: a peer ending the job at the same moment must not wait for this rank.
  if (ctx.recorder) ctx.recorder->record().header.reported.store(report_out, std::memory_order_release);
  await_host_reports(ctx);
  mpi_thread = mpi_thread || ctx.thread_level == MPI_THREAD_MULTIPLE;
  mpi::abort_job(comm, mpi_thread);
}

}  // namespace mpidist::detail
