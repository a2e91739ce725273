// The bracket around every numbered call: refusals, fingerprint check, recording, breaking on failure.
#include "watch/call_scope.hpp"

#include <mpi.h>

#include <cstdio>
#include <string>

#include "core/async_lane.hpp"
#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/text_collectives.hpp"
#include "watch/agreement.hpp"
#include "watch/refusal_notices.hpp"
#include "watch/timeout.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace {

// initial-exec: read with one instruction instead of a __tls_get_addr call, on every collective.
[[gnu::tls_model("initial-exec")]] thread_local char t_thread_marker;

// The step of a non-blocking call this thread runs (StepInFlight), and that call's number.
thread_local const Group* t_step_group = nullptr;
thread_local std::uint64_t t_step_seq = 0;

// The break notices of a call that broke `group` on this rank, for its ranks on other hosts, sent
// before the Error leaves (a rank that goes on computing makes no MPI call that would move them).
void tell_other_hosts_it_broke(const Group& group, std::uint64_t seq) noexcept {
  if (RefusalNotices* notices = refusal_notices()) {
    notices->send_break(group, seq);
    notices->flush();
  }
}

[[noreturn]] void refuse(Group& group, const Fingerprint& call, const std::string& why) {
  throw Error(group.name, call.op, why);
}

// MPIDIST_VALIDATE: every rank's fingerprint must be the same before the call moves data; else
// the same Error on every rank, each rank's call side by side.
void agree_on_fingerprint(Group& group, const Fingerprint& call, std::uint64_t fingerprint) {
  CallRecord mine(call.op, group.sequence);
  mine[CallRecord::Detail] = static_cast<std::int64_t>(fingerprint >> 1);
  const Verdict verdict = agree_on_record(group, call, mine);
  if (!verdict.same(CallRecord::Detail)) {
    const auto all = all_gather_text(group.control, describe_call(snapshot_of(call)));
    std::string detail = "ranks called different collectives:";
    for (std::size_t r = 0; r < all.size(); ++r) detail += (r ? "; rank " : " rank ") + std::to_string(r) + " " + all[r];
    group.failed_in_step = true;
    throw Error(group.name, call.op, detail);
  }
}

}  // namespace

std::uintptr_t this_thread_token() noexcept { return reinterpret_cast<std::uintptr_t>(&t_thread_marker); }

bool this_thread_may_call_mpi() noexcept {
  const Context* ctx = context_if_initialized();
  return ctx != nullptr && (ctx->thread_level == MPI_THREAD_MULTIPLE || ctx->init_thread == this_thread_token());
}

StepInFlight::StepInFlight(const Group& group, std::uint64_t seq) noexcept
    : outer_group_(t_step_group), outer_seq_(t_step_seq) {
  t_step_group = &group;
  t_step_seq = seq;
}

StepInFlight::~StepInFlight() {
  t_step_group = outer_group_;
  t_step_seq = outer_seq_;
}

std::uint64_t StepInFlight::of(const Group& group) noexcept { return t_step_group == &group ? t_step_seq : 0; }

CallTicket start_call(Group& group, const Fingerprint& call, bool in_sequence) {
  Context* ctx = context_if_initialized();
  if (group.is_broken())
    refuse(group, call, "this communicator can no longer be used: " + group.broken + ". Make a new one, or end the job");
  const auto me = this_thread_token();
  if (ctx != nullptr && ctx->thread_level < MPI_THREAD_SERIALIZED && me != ctx->init_thread)
    refuse(group, call, "called from a thread other than the one that initialized mpidist, which MPI forbids at "
                        "ThreadLevel::" + std::string(ctx->thread_level == MPI_THREAD_SINGLE ? "Single" : "Funneled") +
                        "; initialize with ThreadLevel::Serialized or ThreadLevel::Multiple");
  // A blocking call takes its turn after the non-blocking ones issued before it (NCCL's stream order).
  if (!call.async && group.lane) group.lane->drain();
  CallTicket ticket{&group, 0, false};
  ticket.op = call.op;
  std::uintptr_t idle = 0;
  if (group.owner.compare_exchange_strong(idle, me, std::memory_order_acquire)) {
    ticket.owns = true;
    group.failed_in_step = false;
    group.hash_after_failure.reset();
  } else if (idle != me) {
    refuse(group, call, "another thread of this rank is inside a collective on this communicator; calls from two "
                        "threads at once would be matched against each other across ranks. Give each thread its "
                        "own communicator (split or new_group), or serialize the calls");
  }
  ticket.hash = group.hash;
  if (in_sequence) {
    ticket.seq = ++group.sequence;
    // Operation names are string literals: the same address, the same name, the same key.
    if (group.folded_op != call.op) group.folded_op_key = op_key(call.op), group.folded_op = call.op;
    ticket.hash = fold_fingerprint(group.hash, call, group.folded_op_key);
  }
  if (ctx != nullptr && ctx->recorder) {
    // Calls outside the sequence time themselves (monitored_barrier): the watchdog leaves them be.
    const double timeout = !in_sequence                  ? 0.0
                           : group.timeout_seconds >= 0 ? group.timeout_seconds
                                                        : ctx->settings.timeout_seconds;
    ticket.id = ctx->recorder->begin(group.key, in_sequence ? group.progress_slot : -1, ticket.seq, ticket.hash, call,
                                     static_cast<float>(timeout));
  }
  if (call.agree && in_sequence && ticket.owns && group.topology.size > 1 && ctx != nullptr && ctx->settings.validate) {
    try {
      agree_on_fingerprint(group, call, fold_fingerprint(0, call));
    } catch (...) {
      finish_call(ticket, true);
      throw;
    }
  }
  return ticket;
}

void finish_call(const CallTicket& ticket, bool failed) noexcept {
  Group* group = ticket.group;
  if (group == nullptr) return;
  // A failure that every rank raised alike (an agreement's verdict) leaves the ranks in step and
  // the hash alone. Any other may have left them out of step (a timeout, a lost peer, a transport
  // error, this rank's own bad arguments while the others went on): the group breaks, so that no
  // later call here pairs with another rank's different call. A group of one is always in step.
  const bool breaks = failed && !group->failed_in_step && ticket.seq != 0 && group->topology.size > 1;
  if (breaks) {
    try {
      break_group(*group, std::string(ticket.op ? ticket.op : "a call") + " #" + std::to_string(ticket.seq) +
                              " failed on this rank, and the other ranks may have gone on with it");
    } catch (...) {
      break_group(*group, "a call failed");
    }
    // A peer that finished the call without this rank waits for it in the next one: this host's
    // read failed_at on the board (written below), other hosts' a notice.
    tell_other_hosts_it_broke(*group, ticket.seq);
  }
  if (!failed && ticket.seq != 0) group->hash = ticket.hash;
  if (failed && group->failed_in_step && group->hash_after_failure) group->hash = *group->hash_after_failure;
  // A call that broke the group is recorded with the hash it would have left (the group's own no
  // longer counts), so that a peer that returned from it can be told whether it made the same call.
  if (ticket.id != 0)
    if (Context* ctx = context_if_initialized(); ctx != nullptr && ctx->recorder)
      ctx->recorder->end(ticket.id, failed ? CallState::Failed : CallState::Completed,
                         ticket.seq != 0 ? group->progress_slot : -1, ticket.seq, breaks ? ticket.hash : group->hash,
                         breaks);
  if (ticket.owns) {
    group->failed_in_step = false;
    group->hash_after_failure.reset();
    group->owner.store(0, std::memory_order_release);
  }
}

void end_issue(const CallTicket& ticket) noexcept {
  Group* group = ticket.group;
  if (group == nullptr) return;
  if (ticket.seq != 0) group->hash = ticket.hash;
  if (ticket.owns) {
    group->failed_in_step = false;
    group->hash_after_failure.reset();
    group->owner.store(0, std::memory_order_release);
  }
}

void finish_async_call(const CallTicket& ticket, bool failed) noexcept {
  Group* group = ticket.group;
  if (group == nullptr) return;
  // A data step that failed (a timeout, a lost peer) leaves the ranks out of step, as in finish_call.
  const bool breaks = failed && ticket.seq != 0 && group->topology.size > 1;
  if (breaks) {
    try {
      break_group(*group, std::string(ticket.op ? ticket.op : "a call") + "_async #" + std::to_string(ticket.seq) +
                              " failed on this rank, and the other ranks may have gone on with it");
    } catch (...) {
      break_group(*group, "a call failed");
    }
  }
  // Host peers read failed_at on the board (written here); other hosts' ranks a notice, where this
  // thread may make MPI calls (below ThreadLevel::Multiple the lane's may not: they wait for theirs).
  if (ticket.id != 0)
    if (Context* ctx = context_if_initialized(); ctx != nullptr && ctx->recorder)
      ctx->recorder->end(ticket.id, failed ? CallState::Failed : CallState::Completed,
                         ticket.seq != 0 ? group->progress_slot : -1, ticket.seq, ticket.hash, breaks);
  if (breaks && this_thread_may_call_mpi()) tell_other_hosts_it_broke(*group, ticket.seq);
}

}  // namespace mpidist::detail
