// A rank that refuses a call on its own arguments (validation off) says so where its host peers
// read it (CommProgress::refused): peers waiting for it inside that call leave it at once instead
// of at the timeout, and the refusing rank, voting on whether every rank refused, learns at once
// that a peer went on without it. Ranks on other hosts learn it from a message
// (refusal_notices.hpp). Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpidist::detail {

class Group;
struct CommProgress;

/// What a peer of a group did about one call: its rank in the group and, for a refusal, its
/// Error's text.
struct PeerNews {
  int rank = -1;
  std::string text;
  bool from_other_host = false;  // a notice (refusal_notices.hpp), not this host's board
  // Nonzero: it joins no call any more, its communicator broken there in this earlier call (and
  // `text`, if any, its refusal of that call); zero: it refused this call.
  std::uint64_t broke_at = 0;
};

/// Publishes that this rank refused call `seq` of `group` because of `why` (cut to fit).
void publish_refusal(const Group& group, std::uint64_t seq, const std::string& why) noexcept;

/// The text of `slot`'s own refusal of call `seq`, "" where a later refusal rewrote it meanwhile.
std::string refusal_text(const CommProgress& slot, std::uint64_t seq) noexcept;

/// Passes on to this host's ranks a refusal of call `seq` of `group` that this rank learned from
/// another host's notice: `news` names the refusing rank, its text and where it broke.
void relay_refusal(const Group& group, std::uint64_t seq, const PeerNews& news) noexcept;

/// A rank of communicator `key` among `members` (world ranks) that refused call `seq`, as this
/// host's board shows it: a host peer's own refusal, or one a host peer relayed (a refusal of
/// another host's rank, or its broken communicator); or none.
std::optional<PeerNews> refusal_of(std::uint64_t key, const std::vector<int>& members, std::uint64_t seq) noexcept;

/// A host peer among `members` of communicator `key` whose communicator broke in a call before
/// `seq` (its Error left that call out of step): it refuses every later call, this one too; or none.
std::optional<PeerNews> broken_before(std::uint64_t key, const std::vector<int>& members, std::uint64_t seq) noexcept;

/// A host peer among `members` of communicator `key` that left call `seq` without refusing it
/// (the call broke its communicator there, or it finished the call), so it will not vote on it;
/// or none.
std::optional<PeerNews> departure_from(std::uint64_t key, const std::vector<int>& members, std::uint64_t seq) noexcept;

}  // namespace mpidist::detail
