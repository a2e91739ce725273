// The flight recorder: the last MPIDIST_TRACE_ENTRIES collectives of this process (communicator,
// sequence number, operation, sizes, type, root, reduction, times, state) in a ring inside this
// rank's RankRecord, written without allocating, and dumped as JSON (apps/trace/FORMAT.md) on a
// watchdog expiry, a fatal signal, SIGTERM, SIGUSR1 or an escaping Error. Internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "watch/progress_record.hpp"

namespace mpidist::detail {

/// What a collective is, as far as its ranks must agree (and as the recorder shows it).
struct Fingerprint {
  const char* op;           // the public operation: "all_reduce", "barrier", "broadcast_object" ... (a
                            // string literal: the hot path knows a name by its address)
  std::uint64_t count = 0;  // elements (tensors) or values (objects)
  std::uint64_t bytes = 0;
  int dtype = -1;           // DataType or -1
  int root = -1;
  int reduce = -1;          // ReduceOp or -1
  const char* type = nullptr;   // object type name, for object calls
  std::uint64_t type_tag = 0;   // object type fingerprint, the same on every rank
  bool agree = true;            // with MPIDIST_VALIDATE, ranks agree on it first (tensor calls agree in detail themselves)
  bool async = false;           // a non-blocking call (recorded as "<op>_async"; not folded: it matches the blocking call)
  int tag = no_tag;             // a point-to-point message's tag (-1: any); the recorder shows it as the type
};

/// `hash` with `call` folded in: what the ranks of a communicator compare in the background.
std::uint64_t fold_fingerprint(std::uint64_t hash, const Fingerprint& call) noexcept;
/// The same, with the operation's name already hashed: `key` is op_key(call.op) (callers on the
/// hot path keep it from one call to the next).
std::uint64_t fold_fingerprint(std::uint64_t hash, const Fingerprint& call, std::uint64_t key) noexcept;
/// The hash of an operation's name, as fold_fingerprint folds it in.
std::uint64_t op_key(const char* op) noexcept;

/// A communicator as the dump names it.
struct CommDescriptor {
  std::uint64_t key = 0;
  std::string name;
  std::vector<int> world_ranks;
  int rank = 0;
  int slot = -1;     // index into RankHeader::comms, -1 when untracked
  bool alive = true;
};

class FlightRecorder {
 public:
  FlightRecorder(RankRecord& mine, int world_size, std::string trace_dir);

  /// Registers a communicator; returns its progress slot (-1 when all are taken).
  int track(std::uint64_t key, const std::string& name, const std::vector<int>& world_ranks, int rank);
  /// The communicator is gone: frees its slot (its entries stay in the ring and the dump).
  void untrack(std::uint64_t key) noexcept;
  /// Re-points the recorder at `mine` (the board's record moved to private memory).
  void rebind(RankRecord& mine) noexcept { mine_ = &mine; }

  /// Records the start of call `seq` on communicator `key` (progress slot `slot`, -1 for none);
  /// `hash` is the communicator's hash should the call complete. Returns its id. Allocation-free.
  std::uint64_t begin(std::uint64_t key, int slot, std::uint64_t seq, std::uint64_t hash, const Fingerprint& call,
                      float timeout_seconds) noexcept;
  /// Records the end of call `id`; publishes the communicator's hash after it (`hash`), and with
  /// `broke` that the communicator broke there (CommProgress::failed_at).
  void end(std::uint64_t id, CallState state, int slot, std::uint64_t seq, std::uint64_t hash, bool broke) noexcept;

  /// Writes mpidist-trace-rank<r>.json into the trace directory (no-op without one). Uses no heap,
  /// so it may run in a signal handler. One writer at a time: a caller that finds another thread
  /// writing waits (at most a few seconds) for that file instead. Returns false when nothing was
  /// written.
  bool dump(const char* reason, const char* message) noexcept;
  /// Waits (bounded) while another thread writes a dump: a fatal signal that arrives while the
  /// watchdog dumps lets the file be finished before the process dies.
  void await_dump() const noexcept;
  /// "<dir>/mpidist-trace-rank<r>.json", or "" without MPIDIST_TRACE_DIR.
  const std::string& dump_path() const noexcept { return path_; }

  /// Describes communicator `key` ("world", "group{0,2}") or "comm <hex>" when unknown.
  std::string comm_name(std::uint64_t key) const;
  /// Looks up a descriptor; nullptr when unknown.
  const CommDescriptor* find(std::uint64_t key) const noexcept;

  RankRecord& record() noexcept { return *mine_; }

 private:
  bool write_dump(const char* reason, const char* message) noexcept;

  RankRecord* mine_;
  int world_size_;
  std::string path_;
  std::string temp_path_;
  std::vector<CommDescriptor> comms_;  // reserved up front: a signal handler may walk it
  std::mutex comms_mutex_;             // creation and release (not the hot path, not the dump)
  std::vector<char> buffer_;           // the dump is formatted here, then written in pieces
  std::atomic<long> writer_{0};        // the thread (tid) writing a dump, 0 when none
  std::atomic<int> last_dump_ok_{0};
};

/// "1024 float32 sum", "16 int32 root 0", "std::map<...>": the shape of a call for reports.
std::string describe_call(const EntrySnapshot& entry);
/// `call` as an entry of the recorder would hold it (for describe_call).
EntrySnapshot snapshot_of(const Fingerprint& call) noexcept;

}  // namespace mpidist::detail
