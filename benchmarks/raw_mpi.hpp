// The raw MPI side of mpidist-bench: what a user would write by hand for the same collective.
// Half types have no MPI datatype, so they travel as 16-bit words and reduce through a
// user-defined MPI_Op that accumulates in float (as mpidist does); Avg is MPI_SUM, then a divide.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"

namespace bench {

/// The MPI datatype of `dtype` (MPI_UINT16_T for float16 and bfloat16).
MPI_Datatype mpi_type(mpidist::DataType dtype);
/// The MPI_Op for `op` on `dtype`: built-in ops for native types (Avg maps to MPI_SUM), bench-owned
/// user ops for half types. Created on first use, freed by free_raw_mpi_ops().
MPI_Op mpi_op(mpidist::ReduceOp op, mpidist::DataType dtype);
/// Divides `count` elements of `dtype` at `data` by `divisor` in place (raw Avg's second step).
void divide_in_place(void* data, std::size_t count, mpidist::DataType dtype, int divisor);
/// Frees the user-defined ops (before MPI_Finalize).
void free_raw_mpi_ops();
/// An MPI count, or std::invalid_argument when it does not fit in an int.
int mpi_count(std::size_t count);

}  // namespace bench
