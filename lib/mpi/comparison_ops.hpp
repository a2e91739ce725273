// MPI_MIN and MPI_MAX that compare unsigned integers as unsigned, whatever the MPI library. Internal.
#pragma once

#include <mpi.h>

namespace mpidist::detail::mpi {

/// `op` itself, unless it is MPI_MIN or MPI_MAX on an unsigned integer type (MPI_UINT8_T ...
/// MPI_UINT64_T) that the MPI library loaded compares as signed: then mpidist's own commutative
/// op doing the same in unsigned arithmetic. MPICH 4.0.2 (Debian bookworm's) has that bug
/// (pmodels/mpich#6083, fixed in 4.0.3): the library is asked once per type, with
/// MPI_Reduce_local, rather than by its version. Own ops are freed at finalize.
MPI_Op comparison_op(MPI_Op op, MPI_Datatype type);

}  // namespace mpidist::detail::mpi
