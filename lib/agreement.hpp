// Agreeing across the ranks of a communicator. Two kinds:
//  - cheap checks that every rank holds the same value (a length, a hash of key names): one
//    all-reduce of two integers, before any rank acts on a value the others may not share;
//  - the agreement of a call on a group's control channel (CallRecord). Every family of calls
//    (tensor collectives, fused lists, object calls, guards, the vote after a local failure) sends
//    the same record there, so two ranks in different calls still match message for message and
//    learn it from the content, instead of crashing in MPI on messages of different lengths.
// Internal.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <exception>
#include <string_view>

namespace mpidist::detail {

class Group;
struct Fingerprint;

/// The smallest and largest of one value over the ranks of a communicator.
struct Extremes {
  std::uint64_t smallest;
  std::uint64_t largest;
  bool same() const noexcept { return smallest == largest; }
};

/// Collective over `comm`: min and max of `value` over its ranks (one MPI_Allreduce of max(v), max(~v)).
Extremes extremes_across_ranks(MPI_Comm comm, std::uint64_t value);

/// FNV-1a: a hash that is the same in every process, for comparing strings across ranks.
std::uint64_t fnv1a(std::string_view text) noexcept;

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
