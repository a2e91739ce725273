// What one rank is doing about one collective, as its host sees it (read from its progress record
// on the board): the watchdog's account of a rank that has not reached a call. Plain data with
// times as ages, so it means the same after travelling to another host (whose clock differs).
// Internal.
#pragma once

#include <cstdint>
#include <map>

#include "watch/progress_record.hpp"

namespace mpidist::detail {

struct PeerView {
  std::int32_t world_rank = -1;
  std::uint32_t flags = 0;      // the bits below
  std::uint64_t pid = 0;
  std::uint64_t started = 0;    // the last call it started on the communicator asked about
  std::int64_t last_done_age_ns = 0;  // since it finished `last_done`
  std::int64_t current_age_ns = 0;    // since it started `current`
  EntrySnapshot last_done;      // its last finished call, any communicator
  EntrySnapshot current;        // its call in flight, any communicator
  EntrySnapshot at_seq;         // its record of the asked call, when it started it
  std::uint64_t refused = 0;    // the last call it refused on the communicator (refusals.hpp), and why
  char refusal[refusal_text_size] = {};
  char host[host_name_size] = {};

  static constexpr std::uint32_t has_progress = 1;  // it made calls on the communicator
  static constexpr std::uint32_t gone = 2;          // its process has ended
  static constexpr std::uint32_t finished = 4;      // past finalize()
  static constexpr std::uint32_t silent = 8;        // its watchdog has not ticked for seconds

  bool has(std::uint32_t flag) const noexcept { return (flags & flag) != 0; }
};

/// Whether process `pid` of this host still exists (a zombie too); false for 0, a record not yet
/// filled in.
bool process_alive(std::uint64_t pid) noexcept;

/// `peer`'s view for call `seq` of communicator `key`, at `now` (this host's steady clock).
PeerView view_of(const RankRecord& peer, std::uint64_t key, std::uint64_t seq, std::int64_t now);

/// `record`'s progress slot for communicator `key`, or nullptr.
const CommProgress* progress_of(const RankRecord& record, std::uint64_t key) noexcept;

/// `record`'s entry for call `seq` on `key`, if still in its ring.
EntrySnapshot find_call(const RankRecord& record, std::uint64_t key, std::uint64_t seq);

/// `record`'s completed calls on `key` still in its ring, by sequence number.
std::map<std::uint64_t, EntrySnapshot> completed_calls(const RankRecord& record, std::uint64_t key);

}  // namespace mpidist::detail
