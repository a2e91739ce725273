// The transports a tensor collective can take, as one table: each entry says which calls it
// accepts and runs them. A call takes the first entry that accepts it, so a new transport (shared
// memory, hierarchical) is one more row, not a case in several switches. Internal.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "core/collective_call.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail {

struct Transport {
  std::string_view name;             // in error messages: "nccl", "mpi (host memory)", ...
  bool (*accepts)(const Call& call);
  void (*check)(const Call& call);   // local checks before the ranks agree (may be null)
  void (*run)(const Call& call);
  // run() makes no MPI call (it works in the node's shared memory only): a non-blocking call may
  // run it on its communicator's lane at any thread level.
  bool mpi_free = false;
  // Starts calls (one, or an all_reduce_many's list) and returns their Work without waiting: a
  // device backend that queues on a stream. The non-blocking calls hand that Work out; a transport
  // without it runs them at issue.
  std::unique_ptr<WorkState> (*start)(std::span<const Call> calls) = nullptr;
};

/// Every transport, in order of preference.
std::span<const Transport> transports() noexcept;

/// The first transport that accepts `call`, remembered per group for the next call of the same
/// shape. The issuing thread only: a step on a communicator's lane, which runs while the caller
/// issues more, takes first_accepting instead.
const Transport& choose_transport(const Call& call);
/// The first transport that accepts `call`, looked up anew.
const Transport& first_accepting(const Call& call);

}  // namespace mpidist::detail
