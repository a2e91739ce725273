// broadcast, reduce, reduce_scatter and all_gather of host memory through the node's segment
// (shm/segment.hpp), for groups whose ranks share one node. Internal.
#pragma once

#include "core/collective_call.hpp"

namespace mpidist::detail::shm {

/// Runs `call` (one of those four, on a group on one node) through the segment.
void run_other_collective(const Call& call);

}  // namespace mpidist::detail::shm
