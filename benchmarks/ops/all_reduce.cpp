// all_reduce: every rank ends with the element-wise reduction. busbw = algbw × 2(n−1)/n.
#include "../raw_nccl.hpp"
#include "op_util.hpp"

namespace bench::ops {
namespace {

std::size_t check(const Run& run) { return count_wrong_reduction(run); }

void run_mpidist(Run& run) {
  if (run.in_place) mpidist::all_reduce(run.comm, recv_view(run), run.redop);
  else mpidist::all_reduce(run.comm, send_view(run), recv_view(run), run.redop);
}

void run_raw_mpi(Run& run) {
  MPI_Allreduce(run.in_place ? MPI_IN_PLACE : run.send, run.recv, mpi_count(run.counts.recv), mpi_type(run.dtype),
                mpi_op(run.redop, run.dtype), run.raw_comm);
  finish_avg(run, run.recv, run.counts.recv);
}

}  // namespace

extern const OpHooks all_reduce_hooks{
    .name = "all_reduce", .reduces = true, .rooted = false, .has_data = true, .in_place_only = false,
    .in_place = OpHooks::InPlace::Same, .counts = whole_counts, .bus_factor = factor_all_reduce, .init = init_pattern,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nccl_all_reduce};

}  // namespace bench::ops
