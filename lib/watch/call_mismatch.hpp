// Two ranks' records of the same call, compared: where they parted, and whether a rank that
// completed a call that another rank made differently, and failed, returned wrong data. MPI's own
// collectives can end that way (Open MPI's all_to_all with blocks that differ by rank raises its
// error on the overrun ranks and returns on the short one), and the rank that returned has no
// Error to tell it. Internal.
#pragma once

#include <cstdint>
#include <string>

#include "watch/progress_record.hpp"

namespace mpidist::detail {

struct Context;

/// "#4 on world: world rank 0 called <call_a>; world rank 1 called <call_b>".
std::string parted_at(const Context& ctx, std::uint64_t key, std::uint64_t seq, int rank_a, const std::string& call_a,
                      int rank_b, const std::string& call_b);

/// Whether data of the member at communicator rank `from` reaches the member at rank `to` in
/// `call`, as `to` made it: in the all- calls every member's reaches every member; a rooted call's
/// flows from its root (broadcast, scatter) or to it (gather, reduce); a barrier carries none.
bool receives_from(const EntrySnapshot& call, int to, int from);

/// Whether `completed` (a call as the member at communicator rank `to` made it, and returned
/// from) left it wrong data: `failed` (the same call as the member at rank `from` made it, which
/// failed there) was made with other arguments, both by fingerprint and as described, and data of
/// `from` reaches `to` in it. A broadcast root, or a receiver whose root made its call as it did,
/// returned rightly.
bool completed_wrongly(const EntrySnapshot& completed, int to, const EntrySnapshot& failed, int from);

/// The report's words for it: "#4 on c: world rank 2 called all_to_all 3 float32 and returned,
/// so its result is wrong; world rank 0 called all_to_all 2 float32, which failed there".
std::string wrong_completion_text(const Context& ctx, const EntrySnapshot& completed, int completed_world_rank,
                                  const EntrySnapshot& failed, int failed_world_rank);

}  // namespace mpidist::detail
