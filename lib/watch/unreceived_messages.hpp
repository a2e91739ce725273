// finalize()'s report of point-to-point messages that were sent and never received: a pipeline
// stage that sent one activation too many, or a receive the program forgot, is named on stderr
// instead of vanishing with MPI_Finalize. Internal.
#pragma once

namespace mpidist::detail {

struct Context;

/// On every live communicator, receives and names each message still waiting for a receive
/// (after the final check, when every rank has passed its last call). Local; never throws.
void report_unreceived_messages(Context& ctx) noexcept;

}  // namespace mpidist::detail
