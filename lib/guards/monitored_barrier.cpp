// monitored_barrier: group rank 0 collects an arrival message from every rank and answers each
// with the outcome, so that on timeout every rank that came learns who did not. Point-to-point on
// the group's control channel (never matched by a user's message), with tags of its own. Every
// message carries the barrier's number (its generation on the group), so none is taken for
// another barrier's: an arrival for a barrier rank 0 already gave up is answered "late"; a rank
// that gave up waiting withdraws (a message rank 0 reads before it counts that rank as passed);
// rank 0's answers are synchronous sends, so it knows each rank took its answer, and a rank that
// withdrew makes rank 0's barrier fail too, instead of passing on arrivals of a failed barrier.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/context.hpp"
#include "core/mpi_check.hpp"
#include "core/seconds_text.hpp"
#include "watch/call_scope.hpp"
#include "mpidist/communicator.hpp"
#include "mpidist/error.hpp"
#include "mpidist/guards.hpp"

namespace mpidist {
namespace detail {
namespace {

constexpr const char* operation = "monitored_barrier";
constexpr int withdraw_tag = 7299;
constexpr int arrive_tag = 7300;
// The answer for barrier number g travels on tag answer_base + g % answer_tags, so a late rank
// waiting for an earlier barrier's answer never takes a later one's.
constexpr int answer_base = 7301;
constexpr int answer_tags = 16384;
constexpr long long answer_late = -1;

int answer_tag(long long generation) { return answer_base + static_cast<int>(generation % answer_tags); }

using Clock = std::chrono::steady_clock;

// Completes `request` before `end`, polling; false when the time ran out (the request is left).
bool wait_until(MPI_Request& request, Clock::time_point end) {
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    MPIDIST_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    if (polls % 64 == 63 && Clock::now() >= end) return false;
    std::this_thread::yield();
  }
}

std::string describe_ranks(const Group& group, const std::vector<int>& ranks) {
  const auto& placement = context(operation).topology.ranks;
  std::string text;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int world_rank = group.world_ranks[static_cast<std::size_t>(ranks[i])];
    text += (i ? ", " : "") + std::to_string(ranks[i]);
    if (static_cast<std::size_t>(world_rank) < placement.size())
      text += " (on " + placement[static_cast<std::size_t>(world_rank)].hostname + ")";
  }
  return text;
}

// Rank 0: wait for every other rank's arrival, answer them, return the absent ranks.
std::vector<int> coordinate(Group& group, long long generation, Clock::time_point end) {
  const int size = group.topology.size;
  std::vector<char> arrived(static_cast<std::size_t>(size), 0);
  arrived[0] = 1;
  int waiting_for = size - 1;
  long long token = 0;
  MPI_Status status;
  while (waiting_for > 0) {
    MPI_Request request = MPI_REQUEST_NULL;
    MPIDIST_MPI_CHECK(MPI_Irecv(&token, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, arrive_tag, group.control, &request));
    bool got = false;
    for (unsigned polls = 0; !got; ++polls) {
      int done = 0;
      MPIDIST_MPI_CHECK(MPI_Test(&request, &done, &status));
      got = done != 0;
      if (!got && polls % 64 == 63 && Clock::now() >= end) break;
      if (!got) std::this_thread::yield();
    }
    if (!got) {
      MPI_Cancel(&request);
      MPI_Wait(&request, MPI_STATUS_IGNORE);
      break;
    }
    if (token < generation) {  // a rank arriving at a barrier that already timed out: tell it so
      long long late = answer_late;
      MPIDIST_MPI_CHECK(MPI_Send(&late, 1, MPI_LONG_LONG, status.MPI_SOURCE, answer_tag(token), group.control));
      continue;
    }
    if (!arrived[static_cast<std::size_t>(status.MPI_SOURCE)]) --waiting_for;
    arrived[static_cast<std::size_t>(status.MPI_SOURCE)] = 1;
  }
  std::vector<int> absent;
  for (int r = 0; r < size; ++r)
    if (!arrived[static_cast<std::size_t>(r)]) absent.push_back(r);
  return absent;
}

// Rank 0: answers every rank that arrived (generation, count of absent ranks, the ranks) by
// synchronous sends, and returns the ranks that withdrew instead of taking their answer: they gave
// up before rank 0 came (it arrived late, or answered after their timeout).
std::vector<int> answer(Group& group, long long generation, const std::vector<int>& absent, Clock::time_point end) {
  const int size = group.topology.size;
  std::vector<long long> message{generation, static_cast<long long>(absent.size())};
  message.insert(message.end(), absent.begin(), absent.end());
  std::vector<MPI_Request> sent(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
  for (int r = 1; r < size; ++r)
    if (std::find(absent.begin(), absent.end(), r) == absent.end())
      MPIDIST_MPI_CHECK(MPI_Issend(message.data(), static_cast<int>(message.size()), MPI_LONG_LONG, r,
                                   answer_tag(generation), group.control, &sent[static_cast<std::size_t>(r)]));
  // The others wait until a second past their own timeout, which began before rank 0's: by then
  // each has taken its answer or withdrawn.
  const auto give_up = std::max(end, Clock::now()) + std::chrono::seconds(2);
  std::vector<int> withdrawn;
  for (unsigned polls = 0;; ++polls) {
    bool pending = false;
    for (int r = 1; r < size; ++r) {
      auto& request = sent[static_cast<std::size_t>(r)];
      if (request == MPI_REQUEST_NULL) continue;
      int done = 0, waiting = 0;
      MPIDIST_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      if (done) continue;
      MPIDIST_MPI_CHECK(MPI_Iprobe(r, withdraw_tag, group.control, &waiting, MPI_STATUS_IGNORE));
      if (waiting) {
        long long gave_up_on = 0;
        MPIDIST_MPI_CHECK(MPI_Recv(&gave_up_on, 1, MPI_LONG_LONG, r, withdraw_tag, group.control, MPI_STATUS_IGNORE));
        if (gave_up_on == generation) {
          withdrawn.push_back(r);
          MPI_Request_free(&request);  // never matched now: that rank cancelled its receive
          continue;
        }
      }
      pending = true;
    }
    if (!pending) break;
    if (polls % 64 == 63 && Clock::now() >= give_up) {
      for (int r = 1; r < size; ++r)
        if (sent[static_cast<std::size_t>(r)] != MPI_REQUEST_NULL) {
          withdrawn.push_back(r);
          MPI_Request_free(&sent[static_cast<std::size_t>(r)]);
        }
      break;
    }
    std::this_thread::yield();
  }
  std::sort(withdrawn.begin(), withdrawn.end());
  return withdrawn;
}

// Any other rank: its arrival, then rank 0's answer for this barrier (answers of an older one that
// share the tag are dropped). Nullopt when rank 0 did not answer in time; the rank has withdrawn
// then. A first element of `late` says this rank came after rank 0 gave up the barrier.
std::optional<std::vector<long long>> arrive(Group& group, long long generation, Clock::time_point end) {
  MPI_Request arrival = MPI_REQUEST_NULL;
  MPIDIST_MPI_CHECK(MPI_Isend(&generation, 1, MPI_LONG_LONG, 0, arrive_tag, group.control, &arrival));
  std::vector<long long> answer(static_cast<std::size_t>(group.topology.size) + 2, 0);
  for (;;) {
    MPI_Request request = MPI_REQUEST_NULL;
    MPIDIST_MPI_CHECK(MPI_Irecv(answer.data(), static_cast<int>(answer.size()), MPI_LONG_LONG, 0,
                                answer_tag(generation), group.control, &request));
    // Rank 0 may answer a moment after its own timeout: give it a little longer than ours.
    if (!wait_until(request, end + std::chrono::seconds(1))) {
      MPI_Cancel(&request);
      MPI_Status status;
      MPI_Wait(&request, &status);
      int cancelled = 0;
      MPI_Test_cancelled(&status, &cancelled);
      if (cancelled) {
        MPI_Request withdrawal = MPI_REQUEST_NULL;
        MPIDIST_MPI_CHECK(MPI_Isend(&generation, 1, MPI_LONG_LONG, 0, withdraw_tag, group.control, &withdrawal));
        MPI_Request_free(&withdrawal);
        MPI_Request_free(&arrival);
        return std::nullopt;
      }
    }
    if (answer[0] == generation || answer[0] == answer_late) break;
  }
  MPIDIST_MPI_CHECK(MPI_Wait(&arrival, MPI_STATUS_IGNORE));
  return answer;
}

}  // namespace

void monitored_barrier(Group& group, std::chrono::duration<double> timeout, bool wait_all_ranks) {
  if (!(timeout.count() > 0.0))
    throw Error(group.name, operation, "timeout must be > 0 s, got " + seconds_text(timeout.count()));
  if (MainProcessContext::depth() > 0 || group.topology.size == 1) return;
  // Recorded, but outside the sequence: a rank may legitimately miss it, and it times itself.
  CallScope scope(group, Fingerprint{operation}, false);
  const long long generation = static_cast<long long>(++group.monitored_barriers);
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  std::vector<int> absent;
  if (group.topology.rank == 0) {
    absent = coordinate(group, generation, end);
    const std::vector<int> withdrawn = answer(group, generation, absent, end);
    if (!withdrawn.empty())
      throw Error(group.name, operation,
                  std::string(withdrawn.size() == 1 ? "rank " : "ranks ") + describe_ranks(group, withdrawn) +
                      " gave up waiting for this barrier before this rank, which coordinates it, answered (it "
                      "arrived more than the timeout after them); they raised this Error too");
  } else {
    const auto answer = arrive(group, generation, end);
    if (!answer)
      throw Error(group.name, operation,
                  "timed out after " + seconds_text(timeout.count()) + ": rank 0" + describe_ranks(group, {0}).substr(1) +
                      ", which coordinates the barrier, did not answer: it has not come yet, or it gave up waiting "
                      "for this barrier before this rank came; which other ranks are missing is unknown");
    if ((*answer)[0] == answer_late)
      throw Error(group.name, operation,
                  "this rank arrived after the barrier had timed out on rank 0 (it gave up waiting for it)");
    for (long long i = 0; i < (*answer)[1]; ++i) absent.push_back(static_cast<int>((*answer)[static_cast<std::size_t>(i) + 2]));
  }
  if (absent.empty()) return;
  const std::size_t shown = wait_all_ranks ? absent.size() : 1;
  std::string detail = "timed out after " + seconds_text(timeout.count()) + ": " +
                       std::string(absent.size() == 1 ? "rank " : "ranks ") +
                       describe_ranks(group, std::vector<int>(absent.begin(), absent.begin() + static_cast<long>(shown)));
  if (shown < absent.size())
    detail += " and " + std::to_string(absent.size() - shown) + " more (wait_all_ranks=true lists them all)";
  throw Error(group.name, operation, detail + (absent.size() == 1 ? " did not arrive" : " did not arrive"));
}

}  // namespace detail

void monitored_barrier(std::chrono::duration<double> timeout, bool wait_all_ranks) {
  detail::monitored_barrier(detail::world_group("monitored_barrier"), timeout, wait_all_ranks);
}

void monitored_barrier(const Communicator& comm, std::chrono::duration<double> timeout, bool wait_all_ranks) {
  detail::monitored_barrier(detail::group_of(comm, "monitored_barrier"), timeout, wait_all_ranks);
}

void monitored_barrier() { monitored_barrier(world()); }

void monitored_barrier(const Communicator& comm) {
  // Zero means no limit: a year stands for it (Clock::now() + the largest duration would overflow).
  const auto timeout = comm.timeout();
  monitored_barrier(comm, timeout.count() > 0 ? timeout : std::chrono::hours(24 * 365));
}

}  // namespace mpidist
