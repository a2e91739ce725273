// The bracket around every blocking collective: refuses calls that would corrupt (a broken
// communicator, a second thread on one communicator, a thread MPI was not initialized for), numbers
// the call on its communicator, folds its fingerprint into the running hash and records it for
// the flight recorder and the watchdog. A handful of stores: the hot path stays within a few
// tens of nanoseconds. Internal.
#pragma once

#include <cstdint>
#include <exception>

#include "watch/flight_recorder.hpp"
#include "mpidist/detail/call_ticket.hpp"

namespace mpidist::detail {


/// Starts `call` on `group`. `in_sequence` false records it without numbering it (calls that
/// may legitimately be missed by some ranks, like monitored_barrier). Throws Error for misuse.
CallTicket start_call(Group& group, const Fingerprint& call, bool in_sequence = true);

/// A non-blocking call whose issue is over (numbered, checked, agreed) while its data still moves on
/// the group's lane: the group's next call may start. The call counts as completed for the hash.
void end_issue(const CallTicket& ticket) noexcept;
/// The end of such a call's data step (on the lane's thread): recorded completed or failed; a
/// failure breaks the group as finish_call's would.
void finish_async_call(const CallTicket& ticket, bool failed) noexcept;

class CallScope {
 public:
  CallScope(Group& group, const Fingerprint& call, bool in_sequence = true)
      : ticket_(start_call(group, call, in_sequence)), uncaught_(std::uncaught_exceptions()) {}
  ~CallScope() { finish_call(ticket_, std::uncaught_exceptions() > uncaught_); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  CallTicket ticket_;
  int uncaught_;
};

/// This thread, as a number that differs between live threads.
std::uintptr_t this_thread_token() noexcept;

/// Whether this thread may make MPI calls beside the application's: at ThreadLevel::Multiple any
/// thread, else only the one that initialized mpidist (not the async lane's).
bool this_thread_may_call_mpi() noexcept;

/// While a thread runs the data step of the non-blocking call `seq` on `group` (the async lane's
/// job, on the lane's thread or on a waiter that took it), the waits in it watch that call for a
/// peer's refusal, as the issuing thread's waits watch its own (Deadline).
class StepInFlight {
 public:
  StepInFlight(const Group& group, std::uint64_t seq) noexcept;
  ~StepInFlight();
  StepInFlight(const StepInFlight&) = delete;
  StepInFlight& operator=(const StepInFlight&) = delete;
  /// The call whose step this thread runs on `group`; 0 for none.
  static std::uint64_t of(const Group& group) noexcept;

 private:
  const Group* outer_group_;
  std::uint64_t outer_seq_;
};

}  // namespace mpidist::detail
