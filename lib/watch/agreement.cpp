// The call agreement on a group's control channel, and the vote after a local failure.
#include "watch/agreement.hpp"

#include <cstdio>
#include <memory>
#include <string>

#include "core/context.hpp"
#include "core/group.hpp"
#include "core/mpi_check.hpp"
#include "core/text_collectives.hpp"
#include "watch/flight_recorder.hpp"
#include "watch/refusal_notices.hpp"
#include "watch/refusals.hpp"
#include "watch/timeout.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist::detail {
namespace {

constexpr std::size_t fields = CallRecord::field_count;

// "all_reduce 16 float32 sum (call #4)": this rank's call as the reports of different calls name it.
std::string describe(const Fingerprint& call, std::uint64_t seq) {
  return describe_call(snapshot_of(call)) + " (call #" + std::to_string(seq) + ")";
}

// What went wrong, without the rank prefix an mpidist::Error's what() carries.
std::string detail_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.detail();
  } catch (...) {
    return describe_exception(error);
  }
}

// The one MPI operation every agreement on a control channel is: max of (x, -x) per field. The
// buffer lives on the heap: when a wait gives up, the operation stays pending (collectives cannot
// be cancelled) and MPI may still write it, so it is then left to MPI for good.
class Exchange {
 public:
  Exchange(Group& group, const CallRecord& mine) : both_(new std::array<std::int64_t, 2 * fields>{}) {
    auto& both = *both_;
    for (std::size_t f = 0; f < fields; ++f) both[f] = mine.value[f], both[fields + f] = -mine.value[f];
    MPIDIST_MPI_CHECK(
        MPI_Iallreduce(MPI_IN_PLACE, both.data(), 2 * fields, MPI_INT64_T, MPI_MAX, group.control, &request_));
  }
  ~Exchange() {
    if (request_ != MPI_REQUEST_NULL) (void)both_.release();  // still MPI's
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  /// Completes the exchange; false when `deadline` passed first.
  bool complete(const Deadline& deadline) { return complete_before(deadline, request_); }
  Verdict verdict() const noexcept {
    Verdict v;
    for (std::size_t f = 0; f < fields; ++f) v.largest[f] = (*both_)[f], v.smallest[f] = -(*both_)[fields + f];
    return v;
  }

 private:
  std::unique_ptr<std::array<std::int64_t, 2 * fields>> both_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

// Every rank names its call; all of them raise the same Error. Ranks at different sequence
// numbers have parted for good (one skipped a call): the group breaks.
[[noreturn]] void throw_different_calls(Group& group, const Fingerprint& call, const Verdict& v) {
  const auto ops = all_gather_text(group.control, call.op);
  const auto all = all_gather_text(group.control, describe(call, group.sequence));
  const bool parted = !v.same(CallRecord::Seq);
  std::string detail = parted ? "ranks are at different calls on this communicator:" : "ranks called different collectives:";
  for (std::size_t r = 0; r < ops.size(); ++r) detail += (r ? ", rank " : " rank ") + std::to_string(r) + " has " + ops[r];
  detail += " (";
  for (std::size_t r = 0; r < all.size(); ++r) detail += (r ? "; rank " : "rank ") + std::to_string(r) + ": " + all[r];
  detail += ")";
  if (parted) {
    detail += ". One rank skipped a call, or left one by an Error the others did not raise; the communicator can "
              "no longer be used";
    break_group(group, std::string(call.op) + ": " + detail);
  } else {
    group.failed_in_step = true;
  }
  throw Error(group.name, call.op, detail);
}

}  // namespace

CallRecord::CallRecord(const char* call, std::uint64_t seq) noexcept {
  value[Call] = static_cast<std::int64_t>(fnv1a(call) >> 1);  // non-negative: -x must not overflow
  value[Seq] = static_cast<std::int64_t>(seq);
}

Verdict agree_on_record(Group& group, const Fingerprint& call, const CallRecord& mine, const char* waiting_for) {
  const Deadline deadline(call.op, &group);
  Exchange exchange(group, mine);
  if (!exchange.complete(deadline)) deadline.time_out(call.op, waiting_for);
  const Verdict v = exchange.verdict();
  if (!v.same(CallRecord::Call) || !v.same(CallRecord::Seq)) throw_different_calls(group, call, v);
  return v;
}

void throw_agreed_failure(Group& group, const char* operation, std::exception_ptr local) {
  const int size = group.topology.size;
  const int mine = local ? group.topology.rank : size;
  int first_failed = size;
  MPIDIST_MPI_CHECK(MPI_Allreduce(&mine, &first_failed, 1, MPI_INT, MPI_MIN, group.control));
  std::string message = group.topology.rank == first_failed ? describe_exception(local) : "";
  broadcast_text(group.control, first_failed, message);
  group.failed_in_step = true;
  throw Error(group.name, operation, "rank " + std::to_string(first_failed) + " failed: " + message);
}

void vote_on_local_failure(Group& group, const Fingerprint& call, std::exception_ptr local) {
  CallRecord mine(call.op, group.sequence);
  mine[CallRecord::Failed] = 1;
  // The ranks waiting for this one inside the call leave it at once, and say so: this host's read
  // the board, other hosts' a notice.
  const std::string why_refused = detail_of(local);
  publish_refusal(group, group.sequence, why_refused);
  RefusalNotices* const notices = refusal_notices();
  if (notices != nullptr) notices->send_refusals(group, group.sequence, why_refused);
  Exchange exchange(group, mine);
  if (const Deadline deadline(call.op, &group, Deadline::Watch::Departures); !exchange.complete(deadline)) {
    // They did not come: at least one went on into the call, which waits for this rank in vain.
    // How this rank knows: a host peer's record or another host's notice shows it left (or
    // finished) the call, or the timeout.
    const auto& left = deadline.news();
    const std::string how = left ? ": rank " + std::to_string(left->rank) +
                                       " went on into the call without this rank and " + left->text
                                 : " within the communicator's timeout: they went on into the call without this rank";
    const std::string why =
        why_refused + ". The other ranks did not raise the same Error" + how + ", so the ranks are out of step";
    break_group(group, std::string(call.op) + ": " + why);
    if (notices != nullptr) notices->flush();  // the ranks of other hosts still waiting in the call learn it
    if (Context* ctx = context_if_initialized()) ctx->timed_out.store(true);  // the vote is left pending
    throw Error(group.name, call.op, why + " and the communicator can no longer be used");
  }
  const Verdict v = exchange.verdict();
  if (!v.same(CallRecord::Call) || !v.same(CallRecord::Seq)) throw_different_calls(group, call, v);
  if (!v.all_failed()) throw_agreed_failure(group, call.op, local);  // not reached today: only failing ranks vote
  group.failed_in_step = true;  // every rank failed this call: they stay in step
  if (notices != nullptr) notices->forget(group, group.sequence);
  std::rethrow_exception(local);
}

}  // namespace mpidist::detail
