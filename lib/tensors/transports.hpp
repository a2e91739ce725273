// The transports a tensor collective can take, as one table: each entry says which calls it
// accepts and runs them. A call takes the first entry that accepts it, so a new transport (shared
// memory, hierarchical) is one more row, not a case in several switches. Internal.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "core/collective_call.hpp"

namespace mpidist::detail {

struct Transport {
  std::string_view name;             // in error messages: "nccl", "mpi (host memory)", ...
  bool (*accepts)(const Call& call);
  void (*check)(const Call& call);   // local checks before the ranks agree (may be null)
  void (*run)(const Call& call);
  // run() makes no MPI call (it works in the node's shared memory only): a non-blocking call may
  // run it on its communicator's lane at any thread level.
  bool mpi_free = false;
};

/// Every transport, in order of preference.
std::span<const Transport> transports() noexcept;

/// The first transport that accepts `call`.
const Transport& choose_transport(const Call& call);

}  // namespace mpidist::detail
