// Whether the MPI library may move a large message between two ranks of a node in one copy.
// Internal.
#pragma once

namespace mpidist::detail::mpi {
/// What MPI's control variables (MPI_T) say about its shared-memory transport. Open MPI's vader
/// BTL names its mechanism in btl_vader_single_copy_mechanism: "none" (copy in, copy out through
/// its fragments) is the one answer that means no. An MPI that does not say (MPICH, a rank with no
/// node peers, where vader is not loaded) is taken to have one. Local; starts and ends MPI_T.
bool may_copy_large_messages_once();
}  // namespace mpidist::detail::mpi
