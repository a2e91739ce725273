// A rank that refuses a call on its own arguments (validation off) says so where its host peers
// read it (CommProgress::refused): peers waiting for it inside that call leave it at once instead
// of at the timeout, and the refusing rank, voting on whether every rank refused, learns at once
// that a peer went on without it. Ranks on other hosts learn it at the timeout, as before. Internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpidist::detail {

class Group;

/// What a host peer of a group did about one call: its rank in the group and, for a refusal,
/// its Error's text.
struct PeerNews {
  int rank = -1;
  std::string text;
};

/// Publishes that this rank refused call `seq` of `group` because of `why` (cut to fit).
void publish_refusal(const Group& group, std::uint64_t seq, const std::string& why) noexcept;

/// A host peer among `members` (world ranks) of communicator `key` that refused call `seq`, or none.
std::optional<PeerNews> refusal_of(std::uint64_t key, const std::vector<int>& members, std::uint64_t seq) noexcept;

/// A host peer among `members` of communicator `key` that left call `seq` without refusing it
/// (the call broke its communicator there, or it finished the call), so it will not vote on it;
/// or none.
std::optional<PeerNews> departure_from(std::uint64_t key, const std::vector<int>& members, std::uint64_t seq) noexcept;

}  // namespace mpidist::detail
