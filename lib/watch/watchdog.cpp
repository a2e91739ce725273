// The watchdog thread: stalls, missing ranks, and the reports that name them.
#include "watch/watchdog.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

#include "core/context.hpp"
#include "core/rank_prefix.hpp"
#include "core/seconds_text.hpp"
#include "watch/call_mismatch.hpp"
#include "watch/flight_recorder.hpp"
#include "watch/job_end.hpp"
#include "watch/peer_view.hpp"
#include "watch/progress_board.hpp"
#include "watch/refusals.hpp"
#include "watch/remote_progress.hpp"

namespace mpidist::detail {
namespace {

constexpr auto tick_period = std::chrono::milliseconds(100);
constexpr std::int64_t consistency_period_ns = 1'000'000'000;
// A wait that polls (agreement messages) raises its own Error at the timeout; the watchdog acts a
// moment later, for calls that block inside MPI and cannot raise anything.
constexpr double grace_seconds = 1.0;
// How long a report waits for other hosts' answers: it must still end the job within timeout + 5 s.
constexpr double remote_patience_seconds = 1.5;
// The background checks' (once a second): answers take milliseconds; a host that does not answer
// costs the tick this much.
constexpr double background_patience_seconds = 0.5;

std::string seconds(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", ns / 1e9);
  return text;
}

std::string join(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// Whether a peer's view holds its record of `call` (it started that call).
bool holds_its_record(const PeerView& view, const EntrySnapshot& call) {
  const EntrySnapshot& theirs = view.at_seq;
  return theirs.valid && theirs.comm_key == call.comm_key && theirs.seq == call.seq;
}

// A peer's record of `call` where it made that call with other arguments, else nullptr.
const EntrySnapshot* called_differently(const PeerView& view, const EntrySnapshot& call) {
  return holds_its_record(view, call) && describe_call(view.at_seq) != describe_call(call) ? &view.at_seq : nullptr;
}

}  // namespace

std::string describe_wait_in_flight() {
  const Context* ctx = context_if_initialized();
  if (ctx == nullptr || !ctx->recorder || !ctx->board) return "";
  const RankRecord& mine = ctx->recorder->record();
  const auto call = read_entry(mine, mine.header.current.load(std::memory_order_acquire));
  if (!call.valid || call.state != CallState::Started) return "";
  const std::int64_t now = steady_now_ns();
  return "\n  " + describe_entry(*ctx, call) + " has waited " + seconds(now - call.start_ns) + "\n" +
         describe_absent_ranks(*ctx, call, now);
}

std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string describe_entry(const Context& ctx, const EntrySnapshot& call) {
  std::string text = call.op;
  if (call.seq != 0) text += " #" + std::to_string(call.seq);
  text += " on " + ctx.recorder->comm_name(call.comm_key);
  const std::string shape = describe_call(call);
  const std::string op = call.op;
  if (shape.size() > op.size()) text += " (" + shape.substr(op.size() + 1) + ")";
  return text;
}

std::string describe_absent_ranks(const Context& ctx, const EntrySnapshot& call, std::int64_t now, int* missing,
                                  std::vector<int>* reporting_elsewhere) {
  const CommDescriptor* comm = ctx.recorder->find(call.comm_key);
  if (comm == nullptr || call.seq == 0) return "  (the members of this communicator are not known here)\n";
  // Host peers from the board; ranks on other hosts from their hosts' watchdogs, where they can be asked.
  const int me = ctx.topology.rank;
  std::vector<std::optional<PeerView>> views(comm->world_ranks.size());
  std::vector<int> elsewhere;
  for (std::size_t i = 0; i < comm->world_ranks.size(); ++i) {
    const int world_rank = comm->world_ranks[i];
    if (world_rank == me) continue;
    if (const RankRecord* peer = ctx.board->peer(world_rank))
      views[i] = view_of(*peer, call.comm_key, call.seq, now);
    else
      elsewhere.push_back(world_rank);
  }
  const bool can_ask = ctx.remote && ctx.remote->enabled();
  if (can_ask && !elsewhere.empty()) {
    const auto answers = ctx.remote->ask(call.comm_key, call.seq, elsewhere, remote_patience_seconds);
    for (std::size_t i = 0; i < comm->world_ranks.size(); ++i)
      if (const auto it = answers.find(comm->world_ranks[i]); it != answers.end()) views[i] = it->second;
  }

  int absent = 0;
  std::string lines, mismatched;
  std::vector<int> waiting, unseen;
  for (std::size_t i = 0; i < comm->world_ranks.size(); ++i) {
    const int world_rank = comm->world_ranks[i];
    const int rank = static_cast<int>(i);
    if (world_rank == me) {
      waiting.push_back(rank);
      continue;
    }
    if (!views[i]) {
      unseen.push_back(rank);
      continue;
    }
    const PeerView& view = *views[i];
    if (view.has(PeerView::has_progress) && view.started >= call.seq) {
      waiting.push_back(rank);
      const auto& now_in = view.current;
      if (reporting_elsewhere && ctx.board->peer(world_rank) == nullptr && now_in.valid &&
          now_in.state == CallState::Started && now_in.comm_key == call.comm_key && now_in.seq == call.seq &&
          now_in.timeout_seconds > 0)
        reporting_elsewhere->push_back(world_rank);
      // In the same call, but called differently: the mismatch is the story, not the wait. A rank
      // past it (its shared-memory side completed) shows it in its ring.
      if (const EntrySnapshot* theirs = called_differently(view, call))
        mismatched += "  rank " + std::to_string(rank) + " called it as " + describe_call(*theirs) + " (this rank: " +
                      describe_call(call) + ")\n";
      continue;
    }
    ++absent;
    std::string line = "  rank " + std::to_string(rank);
    if (comm->name != "world") line += " (world rank " + std::to_string(world_rank) + ")";
    line += ", pid " + std::to_string(view.pid) + " on " + view.host + ": ";
    if (view.has(PeerView::has_progress) && view.started + 1 < call.seq) {
      // It stopped earlier on this communicator: name the first call it missed, from this rank's ring.
      const auto missed = find_call(ctx.recorder->record(), call.comm_key, view.started + 1);
      line += "finished " + std::to_string(view.started) + " calls on " + comm->name + "; it never joined " +
              (missed.valid ? describe_entry(ctx, missed) : "#" + std::to_string(view.started + 1)) + ". ";
    }
    if (view.has(PeerView::gone))
      line += "its process has ended. ";
    else if (view.has(PeerView::finished))
      line += "it has finished (past finalize). ";
    if (view.last_done.valid)
      line += "last finished " + describe_entry(ctx, view.last_done) + " " + seconds(view.last_done_age_ns) + " ago; ";
    else
      line += "finished no collective yet; ";
    if (view.current.valid && view.current.state == CallState::Started)
      line += "now in " + describe_entry(ctx, view.current) + " for " + seconds(view.current_age_ns);
    else
      line += "now in no collective (computing, or blocked outside mpidist)";
    if (view.has(PeerView::silent)) line += " (its watchdog is silent: stopped?)";
    lines += line + "\n";
  }
  std::string text;
  if (absent > 0) text += "  ranks that have not reached it:\n" + lines;
  if (!waiting.empty()) text += "  ranks waiting in it (or past it): " + join(waiting) + "\n";
  if (!mismatched.empty()) text += "  ranks that called it with other arguments:\n" + mismatched;
  if (!unseen.empty() && can_ask)
    text += "  ranks on other hosts whose hosts did not answer within " + seconds(remote_patience_seconds * 1e9) +
            " (ended, or unreachable; their own reports and trace dumps show them): " + join(unseen) + "\n";
  else if (!unseen.empty())
    text += "  ranks on other hosts, not visible from here (their own reports and trace dumps show them; with "
            "ThreadLevel::Multiple the watchdog asks their hosts): " + join(unseen) + "\n";
  if (missing) *missing = absent;
  return text;
}

std::string first_difference(const Context& ctx, std::uint64_t key, int rank_a,
                             const std::map<std::uint64_t, EntrySnapshot>& calls_a, int rank_b,
                             const std::map<std::uint64_t, EntrySnapshot>& calls_b) {
  // The hash of the first differing call differs, and every later one: the smallest seq whose
  // hashes differ is where the ranks parted.
  for (const auto& [seq, entry] : calls_a) {
    const auto other = calls_b.find(seq);
    if (other == calls_b.end() || other->second.hash == entry.hash) continue;
    return parted_at(ctx, key, seq, rank_a, describe_call(entry), rank_b, describe_call(other->second));
  }
  return "";
}

Watchdog::Watchdog(Context& ctx, double stall_warn_seconds)
    : ctx_(ctx), stall_warn_seconds_(stall_warn_seconds), thread_([this] { run(); }) {}

Watchdog::~Watchdog() { stop(); }

void Watchdog::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Watchdog::request_dump() noexcept { dump_requested_.store(true, std::memory_order_relaxed); }

void Watchdog::run() {
  // Fatal signals belong to the main thread's handlers; this thread must not take them.
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int s : {SIGTERM, SIGUSR1, SIGINT}) sigaddset(&blocked, s);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    tick(steady_now_ns());
    lock.lock();
    wake_.wait_for(lock, tick_period, [this] { return stopping_; });
  }
}

void Watchdog::tick(std::int64_t now) {
  auto& h = ctx_.recorder->record().header;
  h.heartbeat_ns.store(now, std::memory_order_relaxed);
  if (ctx_.remote) ctx_.remote->serve(now);
  if (dump_requested_.exchange(false)) {
    const bool written = ctx_.recorder->dump("signal SIGUSR1", "dump requested with SIGUSR1");
    std::fprintf(stderr, "mpidist: %sflight recorder %s\n", rank_prefix().c_str(),
                 written ? ("dumped to " + ctx_.recorder->dump_path()).c_str()
                         : "not dumped: set MPIDIST_TRACE_DIR to a writable directory");
  }
  const auto call = read_entry(ctx_.recorder->record(), h.current.load(std::memory_order_acquire));
  if (call.valid && call.state == CallState::Started) {
    const double waited = static_cast<double>(now - call.start_ns) / 1e9;
    if (call.timeout_seconds > 0 && waited > call.timeout_seconds + grace_seconds) expire(call, now);
    // No warning where the call's timeout comes first or as early: its report says more.
    const bool timeout_first = call.timeout_seconds > 0 && call.timeout_seconds <= stall_warn_seconds_;
    if (stall_warn_seconds_ > 0 && !timeout_first && waited > stall_warn_seconds_ && warned_id_ != call.id)
      warn_stall(call, now);
  }
  if (now >= next_consistency_ns_) {
    next_consistency_ns_ = now + consistency_period_ns;
    check_consistency();
    check_broken_calls(now);
    if (call.valid && call.state == CallState::Started) {
      check_call_in_flight(call, now);
      check_refused_call(call, now);
    }
  }
}

void Watchdog::expire(const EntrySnapshot& call, std::int64_t now) {
  auto& h = ctx_.recorder->record().header;
  h.reported.store(1, std::memory_order_release);
  // Queries answered from here on count as the reporting ranks of other hosts asking (job_end.hpp).
  const auto asked_before = ctx_.remote ? ctx_.remote->questions() : RemoteProgress::Questions{};
  std::vector<int> reporting_elsewhere;
  std::string report = "watchdog: " + describe_entry(ctx_, call) + " has waited " + seconds(now - call.start_ns) +
                       ", past its timeout of " + seconds_text(call.timeout_seconds) + " (MPIDIST_TIMEOUT or set_timeout)\n";
  report += describe_absent_ranks(ctx_, call, now, nullptr, &reporting_elsewhere);
  const bool dumped = ctx_.recorder->dump("watchdog", report.c_str());
  report += dumped ? "  flight recorder: " + ctx_.recorder->dump_path() + " (mpidist-trace <dir> reads every rank's)\n"
                   : "  set MPIDIST_TRACE_DIR to keep each rank's flight recorder for mpidist-trace\n";
  std::fprintf(stderr, "mpidist: %s%s  ending the job (MPI_Abort)\n", rank_prefix().c_str(), report.c_str());
  std::fflush(stderr);
  end_job_after_report(ctx_, ctx_.world->comm != MPI_COMM_NULL ? ctx_.world->comm : MPI_COMM_WORLD, false,
                       {asked_before, reporting_elsewhere});
}

void Watchdog::warn_stall(const EntrySnapshot& call, std::int64_t now) {
  warned_id_ = call.id;
  const std::string report = "stall: " + describe_entry(ctx_, call) + " has waited " + seconds(now - call.start_ns) + " (warned after " +
                             seconds_text(stall_warn_seconds_) + ": MPIDIST_STALL_WARN, 0 turns this off); still waiting\n" +
                             describe_absent_ranks(ctx_, call, now);
  std::fprintf(stderr, "mpidist: %s%s", rank_prefix().c_str(), report.c_str());
  std::fflush(stderr);
}

void Watchdog::check_consistency() {
  // Host peers from the board; then, once per host (its first rank), the other hosts, asked.
  const RankRecord& mine = ctx_.recorder->record();
  for (const auto& slot : mine.header.comms) {
    const auto key = slot.key.load(std::memory_order_acquire);
    std::uint64_t done = 0, hash = 0;
    if (!comparable_progress(&slot, done, hash)) continue;
    for (const int peer_rank : ctx_.board->host_ranks()) {
      const RankRecord* peer = ctx_.board->peer(peer_rank);
      if (peer == nullptr || peer == &mine) continue;
      std::uint64_t peer_done = 0, peer_hash = 0;
      if (!comparable_progress(progress_of(*peer, key), peer_done, peer_hash)) continue;
      if (peer_done != done || peer_hash == hash) continue;
      report_inconsistency(key, done, first_difference(ctx_, key, mine.header.world_rank, completed_calls(mine, key),
                                                       peer_rank, completed_calls(*peer, key)));
    }
  }
  const auto& host = ctx_.board->host_ranks();
  if (ctx_.remote && ctx_.remote->enabled() && !host.empty() && host.front() == mine.header.world_rank) {
    const HashConflict conflict = ctx_.remote->compare_hashes(background_patience_seconds);
    if (conflict.key != 0) {
      const RankRecord* here = ctx_.board->peer(conflict.here);
      report_inconsistency(conflict.key, conflict.done,
                           here ? first_difference(ctx_, conflict.key, conflict.here, completed_calls(*here, conflict.key),
                                                   conflict.there, conflict.their_calls)
                                : "");
    }
  }
}

// Whether this rank refused `call` on its own arguments: it votes on it instead of joining it.
bool Watchdog::refused_here(const EntrySnapshot& call) const {
  const CommProgress* own = progress_of(ctx_.recorder->record(), call.comm_key);
  return own != nullptr && own->refused.load(std::memory_order_acquire) == call.seq;
}

// This rank's call in flight for a second or more, against the same call of each member that has
// started it: host peers, and at ThreadLevel::Multiple the ranks of other hosts, asked. Arguments
// that differ by rank can hold a call inside MPI (Open MPI's all_to_all with counts that differ
// waited in 6 of 10 jobs) or complete it on some ranks with wrong data, and would otherwise wait
// out the whole timeout before its report named the difference. Both the hashes and the calls as
// described must differ (the report names what each rank called), at two checks in a row: a
// mismatch that mpidist turns into an Error on every rank (MPIDIST_VALIDATE=1's agreement, a type
// the receivers refuse) ends the call within milliseconds of the late rank's start, and must stay
// an Error, not end the job.
void Watchdog::check_call_in_flight(const EntrySnapshot& call, std::int64_t now) {
  const std::uint64_t suspected = std::exchange(suspect_id_, 0);
  if (call.seq == 0 || now - call.start_ns < consistency_period_ns) return;
  const CommDescriptor* comm = ctx_.recorder->find(call.comm_key);
  if (comm == nullptr) return;
  const auto& elsewhere = other_hosts_in(call, *comm, now);
  if (refused_here(call)) return;  // its record differs for that reason
  for (const int world_rank : comm->world_ranks) {
    if (world_rank == ctx_.topology.rank) continue;
    std::optional<PeerView> view;
    if (const RankRecord* peer = ctx_.board->peer(world_rank))
      view = view_of(*peer, call.comm_key, call.seq, now);
    else if (const auto it = elsewhere.find(world_rank); it != elsewhere.end())
      view = it->second;
    // A rank that refused the call on its own arguments (a root out of range) differs for that
    // reason, which check_refused_call names.
    if (view && view->refused == call.seq) continue;
    const EntrySnapshot* theirs = view ? called_differently(*view, call) : nullptr;
    if (theirs == nullptr || theirs->hash == call.hash) continue;
    if (suspected != call.id) {
      suspect_id_ = call.id;
      return;
    }
    report_inconsistency(call.comm_key, call.seq - 1,
                         parted_at(ctx_, call.comm_key, call.seq, ctx_.topology.rank,
                                   describe_call(call) + " (still in it)", world_rank, describe_call(*theirs)));
  }
}

// This rank's call in flight, refused by a peer on its own arguments (refusals.hpp): a host peer,
// or at ThreadLevel::Multiple a rank of another host, as its host answered check_call_in_flight's
// query. The peer votes instead and will never join it. The waits of a blocking call that mpidist
// polls leave it within milliseconds, with an Error naming the refusal; a rank still in it at two
// checks in a row waits where nothing watches for refusals (inside MPI's own blocking collective,
// which cannot be left, or in a non-blocking call's data step) and would wait out the timeout: the
// job ends now, naming the refusal. Not where this rank refused the call too: it votes, and its
// vote ends.
void Watchdog::check_refused_call(const EntrySnapshot& call, std::int64_t now) {
  const std::uint64_t suspected = std::exchange(refused_id_, 0);
  if (call.seq == 0 || now - call.start_ns < consistency_period_ns) return;
  const CommDescriptor* comm = ctx_.recorder->find(call.comm_key);
  if (comm == nullptr) return;
  if (refused_here(call)) return;
  auto refusal = refusal_of(call.comm_key, comm->world_ranks, call.seq);
  if (!refusal) refusal = broken_before(call.comm_key, comm->world_ranks, call.seq);
  if (!refusal && other_hosts_.call_id == call.id) refusal = other_hosts_.refusal;  // asked by check_call_in_flight
  if (!refusal) return;
  if (suspected != call.id) {
    refused_id_ = call.id;
    return;
  }
  const std::string text = refusal->text.empty() ? "" : " (" + refusal->text + ")";
  const std::string rank = "rank " + std::to_string(refusal->rank);
  std::string report = "watchdog: " + describe_entry(ctx_, call) + " cannot complete: ";
  report += refusal->broke_at == 0 ? rank + " of " + comm->name + " refused it on its own arguments" + text +
                                         " and will not join it"
                                   : rank + " can no longer use " + comm->name + ", which broke there in call #" +
                                         std::to_string(refusal->broke_at) + text + ", and will not join it";
  report += "; this rank has waited in it " + seconds(now - call.start_ns) +
            " where it cannot leave the call (inside MPI's own collective, or a non-blocking call's data step)\n";
  end_job_reporting("watchdog", report);
}

// The members of `comm` on other hosts that have started `call`, as their hosts' watchdogs said.
// Asked 1, 2, 4, 8 ... s into the call, about the members not seen in it yet: a job of thousands of
// ranks waiting for one slow rank sends its host ten queries a rank in 600 s, not one a second.
const std::map<int, PeerView>& Watchdog::other_hosts_in(const EntrySnapshot& call, const CommDescriptor& comm,
                                                        std::int64_t now) {
  if (other_hosts_.call_id != call.id) other_hosts_ = {call.id, consistency_period_ns, {}, {}};
  if (!ctx_.remote || !ctx_.remote->enabled() || now - call.start_ns < other_hosts_.next_ask_age_ns)
    return other_hosts_.started;
  other_hosts_.next_ask_age_ns *= 2;
  std::vector<int> unseen;
  for (const int world_rank : comm.world_ranks)
    if (ctx_.board->peer(world_rank) == nullptr && !other_hosts_.started.contains(world_rank))
      unseen.push_back(world_rank);
  if (unseen.empty()) return other_hosts_.started;
  for (const auto& [world_rank, view] : ctx_.remote->ask(call.comm_key, call.seq, unseen, background_patience_seconds)) {
    if (view.refused == call.seq && !other_hosts_.refusal) {
      const auto at = std::find(comm.world_ranks.begin(), comm.world_ranks.end(), world_rank);
      other_hosts_.refusal = PeerNews{static_cast<int>(at - comm.world_ranks.begin()), view.refusal, true};
    } else if (holds_its_record(view, call)) {
      other_hosts_.started[world_rank] = view;
    }
  }
  return other_hosts_.started;
}

// The call that broke a communicator on this rank (its Error was raised here), against every
// other member's record of it. A member that returned from it, where this rank made it with other
// arguments and its data reached that member, has a wrong result and no Error to say so (Open MPI's
// all_to_all with blocks that differ by rank raises its error on the overrun ranks and returns on
// the short one): the job ends naming both calls. Host peers are read every second until their
// record of the call is final; other hosts, at ThreadLevel::Multiple, are asked 1, 2, 4 ... s after
// the failure, about the members not settled yet.
void Watchdog::check_broken_calls(std::int64_t now) {
  const RankRecord& mine = ctx_.recorder->record();
  for (const auto& where : broken_calls(mine)) {
    const std::uint64_t key = where.first, seq = where.second;  // plain names: the lambda below captures them
    BrokenCall& broken = broken_calls_[key];
    if (broken.seq != seq) broken = {seq, consistency_period_ns, {}};
    const CommDescriptor* comm = ctx_.recorder->find(key);
    if (comm == nullptr || broken.settled.size() + 1 >= comm->world_ranks.size()) continue;
    const EntrySnapshot failed = find_call(mine, key, seq);
    if (!failed.valid || failed.state != CallState::Failed) continue;  // left the flight recorder
    const auto judge = [&](int world_rank, const PeerView& view) {
      const auto at = std::find(comm->world_ranks.begin(), comm->world_ranks.end(), world_rank);
      const bool held = holds_its_record(view, failed);
      if (held && completed_wrongly(view.at_seq, static_cast<int>(at - comm->world_ranks.begin()), failed, comm->rank))
        report_inconsistency(key, seq - 1, wrong_completion_text(ctx_, view.at_seq, world_rank, failed, ctx_.topology.rank));
      const bool final = held ? view.at_seq.state != CallState::Started : view.started > seq;
      if (final || view.has(PeerView::gone) || view.has(PeerView::finished)) broken.settled.insert(world_rank);
    };
    std::vector<int> elsewhere;
    for (const int world_rank : comm->world_ranks) {
      if (world_rank == ctx_.topology.rank || broken.settled.contains(world_rank)) continue;
      if (const RankRecord* peer = ctx_.board->peer(world_rank))
        judge(world_rank, view_of(*peer, key, seq, now));
      else
        elsewhere.push_back(world_rank);
    }
    if (elsewhere.empty() || !ctx_.remote || !ctx_.remote->enabled() || now - failed.end_ns < broken.next_ask_age_ns)
      continue;
    broken.next_ask_age_ns *= 2;
    for (const auto& [world_rank, view] : ctx_.remote->ask(key, seq, elsewhere, background_patience_seconds))
      judge(world_rank, view);
  }
}

void Watchdog::report_inconsistency(std::uint64_t key, std::uint64_t done, std::string where) {
  if (where.empty())
    where = "after " + std::to_string(done) + " calls on " + ctx_.recorder->comm_name(key) +
            " (the differing call has left the flight recorder)";
  end_job_reporting("consistency", "consistency: ranks called different collectives on the same communicator, so "
                                   "results are wrong: " + where + "\n");
}

void Watchdog::end_job_reporting(const char* reason, const std::string& report) {
  ctx_.recorder->record().header.reported.store(1, std::memory_order_release);
  const bool dumped = ctx_.recorder->dump(reason, report.c_str());
  std::fprintf(stderr, "mpidist: %s%s%s  ending the job (MPI_Abort)\n", rank_prefix().c_str(), report.c_str(),
               dumped ? ("  flight recorder: " + ctx_.recorder->dump_path() + "\n").c_str() : "");
  std::fflush(stderr);
  end_job_after_report(ctx_, ctx_.world->comm != MPI_COMM_NULL ? ctx_.world->comm : MPI_COMM_WORLD, false);
}

}  // namespace mpidist::detail
