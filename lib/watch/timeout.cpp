// Deadlines: polled waits under the communicator's timeout, and the Error when one passes.
#include "watch/timeout.hpp"

#include <cstdlib>
#include <string>
#include <thread>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/seconds_text.hpp"
#include "core/settings.hpp"
#include "watch/call_scope.hpp"
#include "watch/refusal_notices.hpp"
#include "watch/watchdog.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {

std::string absent_peer(const PeerNews& news, std::uint64_t seq) {
  const std::string rank = "rank " + std::to_string(news.rank);
  const std::string text = news.text.empty() ? "" : " (" + news.text + ")";
  if (news.broke_at == 0)
    return rank + " refused this call (#" + std::to_string(seq) + ") on its own arguments and will not join it" + text;
  return rank + " can no longer use this communicator, which broke there in call #" + std::to_string(news.broke_at) +
         text + ", and will not join this call (#" + std::to_string(seq) + ")";
}

Deadline::Deadline(const char* operation, Group* group, Watch watch)
    : seconds_(group != nullptr && group->timeout_seconds >= 0 ? group->timeout_seconds : settings(operation).timeout_seconds),
      group_(group) {
  end_ = std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds_));
  if (watch == Watch::Clock || group == nullptr) return;
  // The thread that runs a non-blocking call's step watches that call. Otherwise the call in
  // flight is the group's latest only on the thread inside it: the async lane's thread waits for
  // an earlier call's data while the caller may have started later ones.
  call_ = StepInFlight::of(*group);
  const bool step = call_ != 0;
  if (!step && group->owner.load(std::memory_order_acquire) == this_thread_token()) call_ = group->sequence;
  if (call_ == 0) return;
  watch_ = watch;
  // Other hosts' news comes as messages: a step on the lane's thread reads and sends them only
  // where MPI allows that thread to call it. Below Multiple it reads this host's board alone.
  asks_other_hosts_ = !step || this_thread_may_call_mpi();
}

bool Deadline::passed() const {
  const auto now = std::chrono::steady_clock::now();
  if (seconds_ > 0.0 && now >= end_) return true;
  if (watch_ == Watch::Clock || news_) return news_.has_value();
  // The board at most once a millisecond: NCCL's wait asks at every poll, and a large group's
  // members are looked up for each host peer.
  if (now < next_look_) return false;
  next_look_ = now + std::chrono::milliseconds(1);
  // This host's board first, then the notices of other hosts' ranks.
  RefusalNotices* const notices = asks_other_hosts_ ? refusal_notices() : nullptr;
  if (watch_ == Watch::Refusals) {
    news_ = refusal_of(group_->key, group_->world_ranks, call_);
    if (!news_) news_ = broken_before(group_->key, group_->world_ranks, call_);
    if (!news_ && notices != nullptr) news_ = notices->refusal(*group_, call_);
  } else {
    news_ = departure_from(group_->key, group_->world_ranks, call_);
    if (!news_ && notices != nullptr) news_ = notices->departure(*group_, call_);
  }
  return news_.has_value();
}

const char* Deadline::setting() const noexcept {
  return group_ != nullptr && group_->timeout_seconds >= 0 ? " (the communicator's set_timeout)" : " (MPIDIST_TIMEOUT)";
}

void Deadline::time_out(const char* operation, const char* what, const char* aftermath) const {
  if (news_ && watch_ == Watch::Refusals) refused(operation, aftermath);
  std::string why = "timed out after " + seconds_text(seconds_) + " waiting for " + what + setting() +
                    "; a rank may have stopped calling collectives or died";
  if (aftermath != nullptr) why += std::string("; ") + aftermath;
  // The watchdog's account of who is missing: a caught timeout names them as an uncaught one would.
  const std::string text = why + ". The communicator can no longer be used" + describe_wait_in_flight();
  if (Context* ctx = context_if_initialized()) ctx->timed_out.store(true);
  if (group_ != nullptr) {
    break_group(*group_, operation + std::string(" ") + why);
    throw Error(group_->name, operation, text);
  }
  throw Error(operation, text);
}

void Deadline::refused(const char* operation, const char* aftermath) const {
  const std::string why = absent_peer(*news_, call_) + "; this rank had gone on into it, so the ranks are out of step" +
                          (aftermath != nullptr ? std::string("; ") + aftermath : std::string());
  // A refusing rank on another host votes until it learns that this one went on without it; this
  // host's ranks held where no notice reaches them read it on the board (their watchdogs).
  RefusalNotices* const notices = asks_other_hosts_ ? refusal_notices() : nullptr;
  if (news_->from_other_host) {
    if (news_->broke_at == 0 && notices != nullptr) notices->send_departure(*group_, news_->rank, call_);
    relay_refusal(*group_, call_, *news_);
  }
  if (notices != nullptr) notices->flush();
  // The call's requests stay pending, as after a timeout: finalize() must not wait on them.
  if (Context* ctx = context_if_initialized()) ctx->timed_out.store(true);
  break_group(*group_, operation + std::string(": ") + why);
  throw Error(group_->name, operation, why + ". The communicator can no longer be used");
}

void throw_timed_out(const char* operation, const Deadline& deadline, const char* what) {
  deadline.time_out(operation, what);
}

bool complete_before(const Deadline& deadline, MPI_Request& request) {
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    MPIDIST_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    // Reading the clock every poll would dominate small collectives; every 16th costs a few ns a
    // poll. Not rarer: on a loaded host each yield can give the core away for milliseconds.
    if (polls % 16 == 15 && deadline.passed()) {
      // A peer's news can come as the request completes: one that completed is taken, so that the
      // peers that saw it complete do not go on into the next step alone.
      MPIDIST_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      return done != 0;
    }
    std::this_thread::yield();  // ranks oversubscribing cores must let the others progress
  }
}

void wait_or_time_out(const char* operation, const Deadline& deadline, MPI_Request& request, const char* what) {
  if (!complete_before(deadline, request)) deadline.time_out(operation, what);
}

}  // namespace mpidist::detail
