// MPIDIST_TIMEOUT: how long a tensor collective waits for the other ranks before it gives up with
// an Error instead of hanging. Internal.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <optional>

#include "watch/refusals.hpp"

namespace mpidist::detail {

class Group;

/// A point in time the timeout of `group` (set_timeout, else MPIDIST_TIMEOUT) from now, and
/// whether it has passed.
class Deadline {
 public:
  /// What a wait inside a call watches besides the clock: this host's board (refusals.hpp) and
  /// other hosts' notices (refusal_notices.hpp). Only a wait made on the thread inside the call, or
  /// on the thread that runs a non-blocking call's step (StepInFlight), watches it: the call's
  /// sequence number is taken then.
  enum class Watch {
    Clock,
    Refusals,    // a wait for the group's ranks in a call's data: a peer that refused or left the call never comes
    Departures,  // the vote of a rank that refused the call: a peer that went on into it never votes
  };
  /// The deadline of a call on `group`; without one (the library's own steps outside any group),
  /// MPIDIST_TIMEOUT's.
  explicit Deadline(const char* operation, Group* group = nullptr, Watch watch = Watch::Clock);
  /// Whether the time is up, or (watching a call) a peer's news means the wait is in vain.
  bool passed() const;
  /// The peer's news that ended the wait, if any.
  const std::optional<PeerNews>& news() const noexcept { return news_; }
  double seconds() const noexcept { return seconds_; }
  /// Which setting the timeout came from, as errors name it: " (the communicator's set_timeout)"
  /// or " (MPIDIST_TIMEOUT)".
  const char* setting() const noexcept;
  /// Throws the timeout Error for `operation` (after a peer's refusal, the Error that names it),
  /// after marking the group broken (later calls on it fail at once) and the job timed out
  /// (finalize() will not wait for the other ranks).
  /// `aftermath`, when given, says what was done about it ("the NCCL communicator was aborted").
  [[noreturn]] void time_out(const char* operation, const char* what, const char* aftermath = nullptr) const;

 private:
  [[noreturn]] void refused(const char* operation, const char* aftermath) const;

  double seconds_;
  Group* group_;
  std::chrono::steady_clock::time_point end_;
  Watch watch_ = Watch::Clock;
  std::uint64_t call_ = 0;  // the group's call watched, 0 for none
  bool asks_other_hosts_ = true;  // whether this thread may read and send other hosts' notices (MPI)
  mutable std::optional<PeerNews> news_;
  mutable std::chrono::steady_clock::time_point next_look_{};
};

/// Why `news`'s rank will not join call `seq`: "rank 1 refused this call (#3) on its own arguments
/// (out has 9 elements ...) and will not join it", or that its communicator broke in an earlier call.
std::string absent_peer(const PeerNews& news, std::uint64_t seq);

/// Throws the Error of a wait that ran past `deadline`: "timed out after N s waiting for <what>
/// (MPIDIST_TIMEOUT) ...". Shared by every wait so that all timeouts read alike.
[[noreturn]] void throw_timed_out(const char* operation, const Deadline& deadline, const char* what);

/// Completes `request` by polling MPI_Test; false once `deadline` has passed (the request is then
/// left pending: collectives cannot be cancelled).
bool complete_before(const Deadline& deadline, MPI_Request& request);

/// Completes `request` by polling MPI_Test; past `deadline` throws Error(operation, "timed out
/// ... waiting for <what>"). The request is then left pending: collectives cannot be cancelled.
void wait_or_time_out(const char* operation, const Deadline& deadline, MPI_Request& request, const char* what);

}  // namespace mpidist::detail
