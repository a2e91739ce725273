// reduce: the reduction lands in root's receive buffer only. busbw = algbw.
#include "../raw_nccl.hpp"
#include "op_util.hpp"

#include <string_view>
#include <vector>

namespace bench::ops {
namespace {

std::size_t check(const Run& run) {
  if (run.rank != run.root) return 0;  // other ranks' output is unspecified
  return count_wrong_reduction(run);
}

void run_mpidist(Run& run) { mpidist::reduce(run.comm, send_view(run), recv_view(run), run.redop, run.root); }

// MPICH 4.0.2 crashes on MPI_IN_PLACE at a root other than 0 past a few KiB: the careful user's
// raw call sends a copy there, as mpidist does (lib/mpi/host_collectives.cpp).
bool in_place_needs_root_zero() {
  static const bool mpich = [] {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(text, &length);
    return std::string_view(text, static_cast<std::size_t>(length)).substr(0, 5) == "MPICH";
  }();
  return mpich;
}

void run_raw_mpi(Run& run) {
  // MPI_IN_PLACE is legal only at the root; elsewhere the send buffer is read as usual.
  const void* send = run.in_place && run.rank == run.root ? MPI_IN_PLACE : run.send;
  std::vector<std::byte> copy;
  if (send == MPI_IN_PLACE && run.root != 0 && in_place_needs_root_zero()) {
    const auto* data = static_cast<const std::byte*>(run.recv);
    copy.assign(data, data + run.counts.recv * mpidist::size_of(run.dtype));
    send = copy.data();
  }
  MPI_Reduce(send, run.recv, mpi_count(run.counts.recv), mpi_type(run.dtype), mpi_op(run.redop, run.dtype), run.root,
             run.raw_comm);
  if (run.rank == run.root) finish_avg(run, run.recv, run.counts.recv);
}

}  // namespace

extern const OpHooks reduce_hooks{
    .name = "reduce", .reduces = true, .rooted = true, .has_data = true, .in_place_only = false,
    .in_place = OpHooks::InPlace::Same, .counts = whole_counts, .bus_factor = factor_one, .init = init_pattern,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nccl_reduce};

}  // namespace bench::ops
