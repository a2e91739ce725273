// The steps of a tensor collective that the blocking calls (collectives.cpp) and the non-blocking
// ones (async_collectives.cpp) share. Internal.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <span>

#include "core/collective_call.hpp"
#include "tensors/transports.hpp"
#include "watch/flight_recorder.hpp"
#include "mpidist/detail/call_ticket.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail {

/// The call as the caller described it; a group of one inside a MainProcessContext.
Call describe_call(Group& group, CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
                   ReduceOp op, int root, Stream stream);
/// What the recorder and the watchdog see of `call` (`async`: recorded as "<op>_async").
Fingerprint recorded_fingerprint(const Call& call, std::size_t bytes, bool async);
/// Every rank's own checks and the ranks' agreement (call_checks.hpp); the transport to run it.
/// Throws the call's Error (the same on every rank where the ranks checked together).
const Transport* prepare_call(Group& group, Call& call, const BufferView& in, const BufferView& out);
/// A collective this rank cannot make: its arguments failed checks of the caller's own (`local`: a
/// list form's list), made before the call's. Numbered and agreed as the call of that shape would
/// be, so that every rank raises the same Error where the ranks check calls together, and this rank
/// votes where they do not (agreement.hpp); then `local` (or the agreed Error) is thrown.
[[noreturn]] void failed_collective(Group& group, CollectiveKind kind, const char* name, const BufferView& in,
                                    const BufferView& out, ReduceOp op, int root, Stream stream, bool async,
                                    std::exception_ptr local);
/// A whole blocking collective: numbered and watched, checked, agreed and run. `async` marks it in
/// the recorder (an async call run at issue); the caller then drains the group's lane first.
void collective(Group& group, CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
                ReduceOp op, int root, Stream stream, bool async);

// ---- The non-blocking calls (async_collectives.cpp) ----

/// Whether the lane's thread may run a data step on `device`'s memory (`mpi_free`: the step makes
/// no MPI call, as Transport::mpi_free): such steps, and at ThreadLevel::Multiple every host step.
bool lane_may_run(const Group& group, bool mpi_free, int device);
/// Waits for the group's queued steps (nothing when it has no lane).
void drain(Group& group);
/// Runs `fn` (a whole blocking call) now, after the group's queued steps; its Error in the Work.
Work run_at_issue(Group& group, const char* name, const std::function<void()>& fn);
/// Ends the issue of `ticket`'s call and queues its data step on the group's lane.
Work queue_step(Group& group, const char* name, const CallTicket& ticket, std::function<void()> step);
/// After the group's queued steps, starts `calls` with `transport.start` (a device backend's
/// queued work) and ends the issue of `ticket`'s call: the transport's Work.
Work start_step(Group& group, const CallTicket& ticket, const Transport& transport, std::span<const Call> calls);

}  // namespace mpidist::detail
