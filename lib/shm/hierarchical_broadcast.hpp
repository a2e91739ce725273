// The broadcast of host memory across nodes: between the nodes' leaders over MPI, inside each node
// through its segment (lib/shm/hierarchical_broadcast.cpp). Internal.
#pragma once

#include "core/collective_call.hpp"

namespace mpidist::detail::shm {

/// Runs `call` (a host broadcast on a group spanning nodes). Collective over the group.
void run_hierarchical_broadcast(const Call& call);

}  // namespace mpidist::detail::shm
