// Moving short strings between ranks with plain MPI, for the library's own bookkeeping (outcomes,
// reports). User objects go through objects.hpp instead. Internal.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace mpidist::detail {
/// Sends `text` from `root` to every rank of `comm` (length first, then the bytes).
void broadcast_text(MPI_Comm comm, int root, std::string& text);
/// Every rank's `text`, indexed by rank, on every rank.
std::vector<std::string> all_gather_text(MPI_Comm comm, const std::string& text);
}  // namespace mpidist::detail
