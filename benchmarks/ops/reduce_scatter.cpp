// reduce_scatter: the n blocks are reduced; rank r keeps block r. busbw = algbw × (n−1)/n.
#include "../raw_nccl.hpp"
#include "op_util.hpp"

namespace bench::ops {
namespace {

std::size_t check(const Run& run) {
  // This rank's block starts at global index rank × block in the pattern.
  return count_wrong_reduction(run, static_cast<std::size_t>(run.rank) * run.counts.recv);
}

void run_mpidist(Run& run) { mpidist::reduce_scatter(run.comm, send_view(run), recv_view(run), run.redop); }

void run_raw_mpi(Run& run) {
  // In place, MPI takes the whole input in the receive argument and leaves block r at its start,
  // not at rank × block where nccl-tests' layout expects it: reduce into place, then move it.
  if (run.in_place) {
    MPI_Reduce_scatter_block(MPI_IN_PLACE, run.send, mpi_count(run.counts.recv), mpi_type(run.dtype),
                             mpi_op(run.redop, run.dtype), run.raw_comm);
    if (run.recv != run.send) std::memmove(run.recv, run.send, run.counts.recv * mpidist::size_of(run.dtype));
  } else {
    MPI_Reduce_scatter_block(run.send, run.recv, mpi_count(run.counts.recv), mpi_type(run.dtype),
                             mpi_op(run.redop, run.dtype), run.raw_comm);
  }
  finish_avg(run, run.recv, run.counts.recv);
}

}  // namespace

extern const OpHooks reduce_scatter_hooks{
    .name = "reduce_scatter", .reduces = true, .rooted = false, .has_data = true, .in_place_only = false,
    .in_place = OpHooks::InPlace::RecvInSend, .counts = scatter_counts, .bus_factor = factor_gather, .init = init_pattern,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi,
    .run_raw_nccl = nccl_reduce_scatter};

}  // namespace bench::ops
