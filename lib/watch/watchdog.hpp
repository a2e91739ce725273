// The watchdog: a thread per process that looks at this rank's call in flight a few times a
// second (its record on the progress board, so the hot path only stores) and, when the call has
// waited longer than its timeout, prints who has not reached it and what they do instead (read
// from the host peers' records, without MPI), dumps the flight recorder and ends the job. It also
// warns about stalls (MPIDIST_STALL_WARN) and compares the fingerprint hashes of host peers in the
// background, so mismatched calls that "succeeded" end the job instead of passing silently, and a
// call in flight that another rank made differently ends it within seconds, not at its timeout,
// as does a rank that returned with wrong data from a call that broke on this rank.
// Internal.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "watch/peer_view.hpp"
#include "watch/progress_record.hpp"
#include "watch/refusals.hpp"

namespace mpidist::detail {

struct CommDescriptor;
struct Context;

class Watchdog {
 public:
  /// Starts watching. `stall_warn_seconds` 0 disables stall warnings.
  Watchdog(Context& ctx, double stall_warn_seconds);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Stops the thread (idempotent).
  void stop() noexcept;
  /// Asks the thread to dump the flight recorder now (SIGUSR1).
  void request_dump() noexcept;

 private:
  void run();
  void tick(std::int64_t now);
  [[noreturn]] void expire(const EntrySnapshot& call, std::int64_t now);
  void warn_stall(const EntrySnapshot& call, std::int64_t now);
  void check_consistency();
  void check_call_in_flight(const EntrySnapshot& call, std::int64_t now);
  const std::map<int, PeerView>& other_hosts_in(const EntrySnapshot& call, const CommDescriptor& comm, std::int64_t now);
  void check_broken_calls(std::int64_t now);
  void check_refused_call(const EntrySnapshot& call, std::int64_t now);
  bool refused_here(const EntrySnapshot& call) const;
  [[noreturn]] void report_inconsistency(std::uint64_t key, std::uint64_t done, std::string where);
  /// Marks this rank as reporting, dumps the flight recorder under `reason`, prints `report` and
  /// ends the job.
  [[noreturn]] void end_job_reporting(const char* reason, const std::string& report);

  Context& ctx_;
  double stall_warn_seconds_;
  std::uint64_t warned_id_ = 0;
  std::uint64_t suspect_id_ = 0;  // the call in flight that another rank made differently at the last check
  std::uint64_t refused_id_ = 0;  // the call in flight that a host peer had refused at the last check
  // Other hosts' members that have started the call in flight, as their hosts answered (what a rank
  // called does not change once it started it), one that refused it, and when to ask about the
  // others next.
  struct OtherHosts {
    std::uint64_t call_id = 0;
    std::int64_t next_ask_age_ns = 0;
    std::map<int, PeerView> started;  // by world rank
    std::optional<PeerNews> refusal;  // a member there that refused the call (refusals.hpp)
  } other_hosts_;
  // The call where a communicator broke on this rank (its Error was raised here), by communicator,
  // until every other member's record of it is final; other hosts are asked 1, 2, 4 ... s after it.
  struct BrokenCall {
    std::uint64_t seq = 0;
    std::int64_t next_ask_age_ns = 0;
    std::set<int> settled;  // world ranks whose record of it is final, or that have gone
  };
  std::map<std::uint64_t, BrokenCall> broken_calls_;
  std::int64_t next_consistency_ns_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<bool> dump_requested_{false};
  std::thread thread_;
};

/// Who of `call`'s communicator has not reached it, and what each is doing instead, as far as
/// this rank can see (its host peers' records; ranks on other hosts are named as not visible).
/// `missing` receives the count of ranks known to be missing; `reporting_elsewhere` the world ranks
/// of other hosts that wait in the call with a timeout of their own: their watchdogs report it too,
/// and ask this host.
std::string describe_absent_ranks(const Context& ctx, const EntrySnapshot& call, std::int64_t now, int* missing = nullptr,
                                  std::vector<int>* reporting_elsewhere = nullptr);

/// "all_reduce #7 on world (1024 float32 sum)".
std::string describe_entry(const Context& ctx, const EntrySnapshot& call);

/// The first call where world ranks `rank_a` and `rank_b` differ on communicator `key`, from
/// their completed calls (completed_calls()), both described; empty when those do not show it.
std::string first_difference(const Context& ctx, std::uint64_t key, int rank_a,
                             const std::map<std::uint64_t, EntrySnapshot>& calls_a, int rank_b,
                             const std::map<std::uint64_t, EntrySnapshot>& calls_b);

/// For a timeout Error: this rank's call in flight and who has not reached it (as the watchdog
/// reports it), on lines after a newline; "" when no call is in flight.
std::string describe_wait_in_flight();

std::int64_t steady_now_ns() noexcept;

}  // namespace mpidist::detail
