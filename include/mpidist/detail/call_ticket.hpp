// A collective in flight, as the header-only object calls hold it (lib/watch/call_scope.hpp starts and
// ends it). Internal.
#pragma once

#include <cstdint>

namespace mpidist::detail {

class Group;

struct CallTicket {
  Group* group = nullptr;
  std::uint64_t id = 0;    // flight-recorder id, 0 when not recorded
  bool owns = false;       // this call took the communicator (false when nested on one thread)
  std::uint64_t seq = 0;   // its sequence number, 0 outside the sequence
  std::uint64_t hash = 0;  // the communicator's hash once the call completes
  const char* op = nullptr;  // the public operation
};

/// Ends the call: completed, or failed. A failure breaks the communicator unless every rank of
/// the call raised it alike (the ranks are then still in step).
void finish_call(const CallTicket& ticket, bool failed) noexcept;

}  // namespace mpidist::detail
