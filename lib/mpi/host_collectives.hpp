// The MPI path: tensor collectives on host memory (and on device memory through CUDA-aware MPI).
// Internal.
#pragma once

#include <mpi.h>

#include "core/collective_call.hpp"

namespace mpidist::detail::mpi {

/// Runs `call` with MPI collectives on the library communicator. Exact datatype mapping; float16 and
/// bfloat16 reductions through user-defined MPI_Ops that compute in float; Avg as a sum followed by
/// a division on the host; counts above the per-call limit split into chunks.
void run(const Call& call);

/// The most elements one MPI call moves: INT_MAX, or less where MPIDIST_MPI_MAX_COUNT says so (a
/// test run lowers it to reach the code that splits larger payloads).
std::size_t max_count();

/// True when `call` needs arithmetic on the CPU (user-defined half ops, the Avg division), so its
/// buffers must be host memory even when MPI itself could read device memory.
bool needs_host_arithmetic(const Call& call);

/// The MPI datatype of `dtype` (MPI_UINT16_T for the two half types: their ops do the arithmetic).
MPI_Datatype datatype(DataType dtype);
/// The MPI_Op for `op` on `dtype` (Avg maps to the sum). Half types get mpidist's own ops.
MPI_Op reduction(ReduceOp op, DataType dtype);

/// Divides `count` elements at `data` by `divisor` in place (integers truncate toward zero).
void divide(void* data, std::size_t count, DataType dtype, int divisor);

}  // namespace mpidist::detail::mpi
