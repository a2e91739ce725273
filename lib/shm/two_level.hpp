// The 2D hierarchical all-reduce across nodes of equal size (lib/shm/two_level.cpp). Internal.
#pragma once

#include "core/collective_call.hpp"

namespace mpidist::detail::shm {

/// Runs `call` (a host all_reduce on a group whose nodes all hold the same number, more than one,
/// of its ranks): reduce-scatter in each node's segment, an all-reduce of each local rank's slice
/// with the same local rank of the other nodes, an all-gather in the segment; pipelined in chunks.
/// Collective over the group; the first call also splits the group's `across` communicator.
void run_two_level(const Call& call);

}  // namespace mpidist::detail::shm
