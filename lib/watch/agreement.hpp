// Agreeing on a call across the ranks of a communicator, on its group's control channel. Every
// family of calls (tensor collectives, fused lists, object calls, guards, the vote after a local
// failure) sends the same record there (CallRecord), so two ranks in different calls still match
// message for message and learn it from the content, instead of crashing in MPI on messages of
// different lengths. The cheap same-value checks are in core/same_everywhere.hpp. Internal.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <exception>
#include <string_view>

#include "core/same_everywhere.hpp"

namespace mpidist::detail {

class Group;
struct Fingerprint;

/// One rank's account of the call it is in, as every agreement on a control channel sends it.
struct CallRecord {
  enum Field : std::size_t { Failed, Call, Seq, Count, Dtype, Reduce, Root, Route, Detail, field_count };
  std::array<std::int64_t, field_count> value{};

  /// `call` (the public operation's name) at sequence number `seq` of its group; other fields 0.
  CallRecord(const char* call, std::uint64_t seq) noexcept;
  std::int64_t& operator[](Field f) noexcept { return value[f]; }
  std::int64_t operator[](Field f) const noexcept { return value[f]; }
};

/// The ranks' records, field by field: what every agreement decides on.
struct Verdict {
  std::array<std::int64_t, CallRecord::field_count> smallest{}, largest{};
  bool same(CallRecord::Field f) const noexcept { return smallest[f] == largest[f]; }
  bool any_failed() const noexcept { return largest[CallRecord::Failed] != 0; }
  bool all_failed() const noexcept { return smallest[CallRecord::Failed] != 0; }
};

/// Collective over `group.control`: every rank's `mine`, reduced, under the group's deadline.
/// When the ranks are in different calls (Call or Seq differ) it throws, on every rank, the Error
/// that names each rank's call (`call` describes this rank's); ranks at different sequence
/// numbers are out of step, and the group breaks. Otherwise returns the verdict, the same on
/// every rank, for the family to act on.
/// `waiting_for` names whom a timeout waited for.
Verdict agree_on_record(Group& group, const Fingerprint& call, const CallRecord& mine,
                        const char* waiting_for = "the other ranks to join the collective");

/// Throws, on every rank, the Error of a call that failed on some rank: "rank R failed: <its
/// text>" for the lowest failing rank R, after `verdict` said that some rank failed. Marks the
/// failure as one every rank raised alike. Collective over `group.control`.
[[noreturn]] void throw_agreed_failure(Group& group, const char* operation, std::exception_ptr local);

/// This rank's own arguments to the call in flight were bad (`local`), and the ranks did not
/// check them together beforehand (validation off). Learns from the others whether they all
/// failed the same call: then the ranks are in step, the group stays usable, and `local` is
/// rethrown as it is. Otherwise some rank went on into the call, the ranks are out of step, and
/// the group breaks; the Error says so.
[[noreturn]] void vote_on_local_failure(Group& group, const Fingerprint& call, std::exception_ptr local);

}  // namespace mpidist::detail
