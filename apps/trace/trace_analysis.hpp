// What a job's dumps say went wrong: the first collective that did not complete on every member
// of its communicator, who never joined it and what they were doing instead, and every call that
// the members of one communicator made differently at the same sequence number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace_dump.hpp"

namespace mpidist::trace {

/// What identifies a call across ranks: two ranks at one sequence number must agree on all of it.
struct Call {
  std::string op;
  std::uint64_t count = 0;
  std::string dtype;
  std::int64_t root = -1;
  std::string reduce;
  std::string type;
  friend bool operator==(const Call&, const Call&) = default;
};
Call call_of(const Entry& e);
/// Point-to-point entries ("send", "recv") sit outside the communicator's numbered sequence; their
/// root is the peer (group rank, -1 for any rank) and their type the tag ("tag 7").
bool is_p2p(const std::string& op);
/// "all_reduce 1024 float32 sum", "broadcast 1024 float32 root 0", "barrier",
/// "recv 3 float32 from rank 1 (tag 7)".
std::string describe(const Call& c);

/// A ring entry as the report shows it.
struct EntryRef {
  std::string comm;
  std::uint64_t seq = 0;
  Call call;
  std::string state;
};

struct Reached {
  int rank;
  std::string state;
  std::optional<Call> other_call;  // set when this rank made another call at that sequence number
};

/// A member that never joined the collective, and what it was doing instead.
struct Absent {
  int rank = 0;
  bool has_dump = false;
  std::string host;
  std::optional<EntryRef> last_completed;
  std::optional<EntryRef> current;  // its latest call that had not completed
};

struct Incomplete {
  std::string comm;
  std::vector<int> members;  // world ranks
  std::uint64_t seq = 0;
  Call call;                 // as the first rank that reached it recorded it
  std::vector<Reached> reached;
  std::vector<Absent> never_joined;
  std::vector<int> unknown;  // dropped from their ring: cannot say
};

/// Ranks at one sequence number that made the same call.
struct CallGroup {
  std::vector<int> ranks;
  Call call;
};
struct Mismatch {
  std::string comm;
  std::uint64_t seq = 0;
  std::vector<CallGroup> groups;
};

/// A send or receive that had not completed when its rank dumped, and what its peer shows.
struct PendingP2P {
  int rank = 0;         // world rank
  std::string comm;
  Call call;
  std::string state;
  double waited_s = 0;  // since it started, at its rank's dump
  std::string peer;     // what the peer's dump says of the other side
};

struct RankSummary {
  int rank = 0;
  std::string host;
  std::int64_t pid = 0;
  std::string reason;
  std::string message;
  std::uint64_t recorded = 0;
  std::uint64_t capacity = 0;
  std::uint64_t dropped = 0;
};

struct Findings {
  std::string dir;
  int world_size = 0;
  std::vector<RankSummary> dumps;
  std::vector<int> missing_dumps;
  std::optional<Incomplete> first_incomplete;
  std::vector<Mismatch> mismatches;
  std::vector<PendingP2P> pending_p2p;
};

/// Analyzes a job's dumps (see FORMAT.md for the rules).
Findings analyze(const DumpSet& set);

/// The report for people, and the same findings as one JSON object for tools.
std::string format_text(const Findings& f);
std::string format_json(const Findings& f);

/// "0,2-5,7".
std::string rank_list(const std::vector<int>& ranks);

}  // namespace mpidist::trace
