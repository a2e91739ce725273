// Before a tensor collective moves data, every rank checks its own arguments and all ranks agree
// that they called the same collective with the same shape, so a mistake on one rank becomes an
// Error on every rank instead of a hang or silent corruption. Internal.
#pragma once

#include <exception>
#include <string_view>

#include "core/collective_call.hpp"
#include "tensors/transports.hpp"

namespace mpidist::detail {

/// Throws Error unless `in` and `out` are a valid pair for `kind` on this rank (element types,
/// counts relative to `world_size`, memory kinds and devices, reductions defined on tensors).
void check_local_arguments(CollectiveKind kind, const char* name, const BufferView& in, const BufferView& out,
                           ReduceOp op, int world_size, int rank, int root);

/// Collective: every rank passes its call and its local failure (null when its arguments were
/// fine). Throws the same Error on every rank if any rank failed or if the ranks disagree on the
/// collective, element count, element type, reduction, root or transport; the message names the
/// ranks and their values. Waits at most MPIDIST_TIMEOUT for the other ranks. The exchange runs on
/// the group's control channel when the job validates the call (Settings::validates: by default
/// the calls on device memory where any rank has a CUDA device); without it, a local failure is
/// voted on, and the group breaks if the others went on into the call.
/// `transport` is null when the local checks failed.
void agree_on_call(const Call& call, const Transport* transport, std::exception_ptr local);

}  // namespace mpidist::detail
