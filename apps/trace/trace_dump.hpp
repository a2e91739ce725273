// One rank's flight-recorder dump (apps/trace/FORMAT.md), read and checked field by field, and
// the set of dumps a job left in a directory.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mpidist::trace {

/// A dump that cannot be analyzed: the message names the file and the field.
class DumpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A communicator the rank belonged to at dump time.
struct CommInfo {
  std::string name;
  std::vector<int> ranks;  // world ranks in group-rank order
  int rank = 0;            // this process's rank in it
  std::uint64_t sequence = 0;
  std::string hash;
};

/// One collective call from the ring.
struct Entry {
  std::string comm;
  std::uint64_t seq = 0;
  std::string op;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::string dtype;
  std::int64_t root = -1;
  std::string reduce;
  std::string type;
  std::string state;  // queued | started | completed | failed
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string hash;
  bool completed() const noexcept { return state == "completed"; }
};

struct Dump {
  std::string source;  // the file it came from
  int rank = 0;
  int world_size = 0;
  std::string host;
  std::int64_t pid = 0;
  std::string reason;
  std::string message;
  std::int64_t now_ns = 0;
  std::uint64_t capacity = 0;
  std::uint64_t recorded = 0;
  std::vector<CommInfo> communicators;
  std::vector<Entry> entries;  // oldest first
  /// Calls the ring no longer holds.
  std::uint64_t dropped() const noexcept { return recorded > entries.size() ? recorded - entries.size() : 0; }
};

/// The largest world the reader believes (a guard against a corrupt world_size).
inline constexpr int max_world_size = 1 << 20;

/// Parses and validates one dump file's text; DumpError names `source` and what is wrong.
Dump parse_dump(std::string_view text, const std::string& source);

/// Every rank's dump from one job; ranks without a file are listed in `missing`.
struct DumpSet {
  std::string dir;
  int world_size = 0;
  std::vector<Dump> dumps;  // by rank
  std::vector<int> missing;
};

/// Builds a DumpSet from parsed dumps: checks that they agree on world_size and that no rank
/// appears twice.
DumpSet make_dump_set(std::vector<Dump> dumps, const std::string& dir);

/// Reads every mpidist-trace-rank<N>.json in `dir` (DumpError when there is none or one is
/// unreadable).
DumpSet read_dump_dir(const std::string& dir);

}  // namespace mpidist::trace
