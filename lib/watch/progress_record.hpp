// What every rank publishes about its collectives, in memory its node peers can read without any
// MPI call (progress_board.hpp): the calls it made (the flight recorder's ring) and, per
// communicator, how far it got. The watchdog reads it to say who is missing from a stuck call and
// what they do instead, and compares fingerprints across ranks in the background. Plain fixed-size
// data: no pointers, since peers map it at other addresses. Internal.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mpidist::detail {

enum class CallState : std::uint32_t { Empty = 0, Queued = 1, Started = 2, Completed = 3, Failed = 4 };

inline constexpr std::size_t op_name_size = 24;
inline constexpr std::size_t type_name_size = 64;  // typeid(T).name(): std::string's is 48
inline constexpr std::size_t host_name_size = 64;
inline constexpr std::size_t refusal_text_size = 192;  // CommProgress::refusal and relayed_text, cut to fit
/// TraceEntry::tag of a call that is no point-to-point message.
inline constexpr std::int32_t no_tag = -2;
/// Communicators whose progress a rank publishes; calls on more are still recorded in the ring.
inline constexpr std::size_t tracked_communicators = 32;

/// One collective as this rank made it. `id` (1-based position in the rank's history) is written
/// last with release and checked again after reading, so a reader never trusts a torn entry.
struct TraceEntry {
  std::atomic<std::uint64_t> id{0};
  std::uint64_t comm_key = 0;  // the communicator (Group::key), the same on every member
  std::uint64_t seq = 0;       // its sequence number there; 0 for calls outside the sequence
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::uint64_t hash = 0;      // the communicator's running fingerprint hash after this call (as if completed
                               // where the call broke the communicator)
  std::int64_t start_ns = 0;   // CLOCK_MONOTONIC (shared by a host's processes), read coarsely: 1-4 ms ticks
  std::atomic<std::int64_t> end_ns{0};
  std::atomic<CallState> state{CallState::Empty};
  std::int32_t dtype = -1;     // DataType, -1 for calls without one
  std::int32_t root = -1;
  std::int32_t reduce = -1;    // ReduceOp
  float timeout_seconds = 0;   // the watchdog's limit for this call, 0 = none
  std::int32_t tag = no_tag;   // a point-to-point message's tag (-1: any), read as the type "tag 7"
  char op[op_name_size] = {};
  char type[type_name_size] = {};  // object type for object calls
};

/// How far one rank got on one communicator. `version` is odd while `done` and `hash` change.
/// The hash folds the fingerprints of the calls that completed: a call that failed on every rank
/// (validation caught a mismatch) leaves the ranks' hashes equal.
struct CommProgress {
  std::atomic<std::uint64_t> key{0};      // 0: slot unused
  std::atomic<std::uint64_t> started{0};  // sequence number of the last call started
  std::atomic<std::uint32_t> version{0};
  std::atomic<std::uint64_t> done{0};     // sequence number of the last call finished
  std::atomic<std::uint64_t> hash{0};     // fingerprint hash after it
  // Sequence number of the call where the communicator broke on this rank (an Error that left the
  // ranks out of step), 0 if none. From there the ranks' counts may differ legitimately (the Error
  // told the user, and finalize() reports it); comparisons stop. A failure that every rank raised
  // alike leaves this 0: the ranks are in step and their hashes stay comparable.
  std::atomic<std::uint64_t> failed_at{0};
  // Sequence number of a call this rank refused on its own arguments (validation off) and now
  // votes on, 0 if none: the others, waiting for it inside that call, leave it at once instead of
  // at the timeout (watch/refusals.hpp). `refusal` holds the Error's text, written first.
  std::atomic<std::uint64_t> refused{0};
  char refusal[refusal_text_size] = {};
  // Sequence number of a call that a rank of another host refused, 0 if none: this rank learned
  // it from that rank's notice while waiting in the call (watch/refusal_notices.hpp) and passes it
  // on to its host peers, who read no notice where MPI holds them. `relayed_rank` is the refusing
  // rank (in the communicator), `relayed_text` its Error's text, all written first.
  std::atomic<std::uint64_t> relayed{0};
  std::int32_t relayed_rank = -1;
  std::uint64_t relayed_broke_at = 0;  // nonzero: that rank's communicator broke in this call before
  char relayed_text[refusal_text_size] = {};
};

/// RankHeader::reported once the rank's report (watchdog, consistency, an escaping Error) is out.
constexpr std::uint32_t report_out = 2;

struct RankHeader {
  std::atomic<std::uint64_t> pid{0};
  std::atomic<std::int64_t> heartbeat_ns{0};  // the watchdog thread's last tick
  std::atomic<std::uint64_t> recorded{0};     // calls recorded; the ring holds the last `capacity`
  std::atomic<std::uint64_t> current{0};      // id of the call in flight, 0 when none
  std::atomic<std::uint64_t> last_done{0};    // id of the last call that finished
  std::atomic<std::uint64_t> last_break{0};   // id of the last call that broke its communicator here, 0 if none
  std::atomic<std::uint32_t> finished{0};     // 1 once the rank is past finalize()
  std::atomic<std::uint32_t> reported{0};     // 1 while it reports and ends the job, report_out once said
  std::int32_t world_rank = -1;
  std::uint32_t capacity = 0;                 // ring entries: MPIDIST_TRACE_ENTRIES rounded up to a power of two
  char host[host_name_size] = {};
  CommProgress comms[tracked_communicators];
};

/// A rank's whole record: the header, then `capacity` ring entries.
struct RankRecord {
  RankHeader header;
  TraceEntry* ring() noexcept { return reinterpret_cast<TraceEntry*>(this + 1); }
  const TraceEntry* ring() const noexcept { return reinterpret_cast<const TraceEntry*>(this + 1); }
  static std::size_t bytes(std::uint32_t capacity) noexcept { return sizeof(RankRecord) + capacity * sizeof(TraceEntry); }
};

/// A consistent copy of an entry, or nothing when the slot holds another call (or is being rewritten).
struct EntrySnapshot {
  bool valid = false;
  std::uint64_t id = 0, comm_key = 0, seq = 0, count = 0, bytes = 0, hash = 0;
  std::int64_t start_ns = 0, end_ns = 0;
  CallState state = CallState::Empty;
  std::int32_t dtype = -1, root = -1, reduce = -1;
  float timeout_seconds = 0;
  char op[op_name_size] = {};
  char type[type_name_size] = {};
};

/// Where call `id` (1-based) lies in a ring of `capacity` entries, a power of two (ProgressBoard
/// rounds it up): a mask, where a modulo would cost a division twice a call.
inline std::size_t ring_index(std::uint64_t id, std::uint32_t capacity) noexcept { return (id - 1) & (capacity - 1); }

/// The id of the oldest call still in the ring of a rank that recorded `recorded` calls.
inline std::uint64_t oldest_held(std::uint64_t recorded, std::uint32_t capacity) noexcept {
  return recorded > capacity ? recorded - capacity + 1 : 1;
}

/// "tag 7", or "any tag" for -1: how a message's tag reads as its type. No heap (signal handlers).
void write_tag_text(char (&out)[type_name_size], std::int32_t tag) noexcept;

/// Reads entry `id` of `record` (1-based), valid only if it is still in the ring; a message's
/// tag is read into its type.
EntrySnapshot read_entry(const RankRecord& record, std::uint64_t id) noexcept;

/// (done, hash) of `slot`, read consistently; false while the owner was writing it.
bool read_progress(const CommProgress& slot, std::uint64_t& done, std::uint64_t& hash) noexcept;

/// The calls where a communicator broke on `record`'s rank, as (communicator key, sequence
/// number): every tracked communicator's (CommProgress::failed_at), and the last one, whose
/// communicator may be gone since (RankHeader::last_break).
std::vector<std::pair<std::uint64_t, std::uint64_t>> broken_calls(const RankRecord& record);

/// (done, hash) of `slot` when the consistency checks may compare it: a slot in use, at least one
/// call finished, not failed (a failed communicator stops counting), read consistently.
bool comparable_progress(const CommProgress* slot, std::uint64_t& done, std::uint64_t& hash) noexcept;

}  // namespace mpidist::detail
