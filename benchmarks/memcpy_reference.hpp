// The memcpy reference row of mpidist-bench: what the machine's memory can do, measured in the
// same run as the collectives, so busbw can be read as a fraction of it.
#pragma once

#include <mpi.h>

namespace bench {

/// Collective over `comm`: rank 0 copies a 64 MiB buffer with 2 threads (one half each) while
/// the other ranks wait, best of a few rounds; every rank returns the copy rate in GB/s (bytes
/// copied per second; the memory moves twice that, read plus write).
double memcpy_reference(MPI_Comm comm);

}  // namespace bench
