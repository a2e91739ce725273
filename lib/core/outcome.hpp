// Agreeing on success or failure across the ranks of a communicator. Internal.
#pragma once

#include <mpi.h>

#include <exception>

#include "mpidist/guards.hpp"

namespace mpidist::detail {

/// Collective over `comm` (a library channel): every rank passes its own failure or null; if any
/// rank failed, every rank throws Error(operation, "rank R failed: ...") for the lowest failing
/// rank R (its rank in `comm`). No MainProcessContext shortcut: for the library's own steps.
void agree_on_outcome(MPI_Comm comm, const char* operation, std::exception_ptr local);

}  // namespace mpidist::detail
