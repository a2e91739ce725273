// barrier: time only (no data, no bandwidth, one row).
#include "op_util.hpp"
#include "mpidist/guards.hpp"

namespace bench::ops {
namespace {

Counts no_counts(std::size_t, std::size_t, int) { return {}; }
double factor_none(int) { return 0.0; }
void init(Run&) {}
std::size_t check(const Run&) { return 0; }
void run_mpidist(Run& run) { mpidist::barrier(run.comm); }
void run_raw_mpi(Run& run) { MPI_Barrier(run.raw_comm); }

}  // namespace

extern const OpHooks barrier_hooks{
    .name = "barrier", .reduces = false, .rooted = false, .has_data = false, .in_place_only = true,
    .in_place = OpHooks::InPlace::Same, .counts = no_counts, .bus_factor = factor_none, .init = init,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
