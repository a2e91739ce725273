// scatter: block j of root's buffer goes to rank j (MPI_Scatter). busbw = algbw × (n−1)/n.
#include "op_util.hpp"

namespace bench::ops {
namespace {

// Every rank's send buffer holds its pattern; root's is the one that counts.
std::size_t check(const Run& run) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return count_wrong(typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv),
                       static_cast<std::size_t>(run.rank) * run.counts.recv, pattern_table<T>(run.root, run.nranks));
  });
}

void run_mpidist(Run& run) {
  mpidist::scatter(run.comm, run.rank == run.root ? send_view(run) : mpidist::BufferView(nullptr, 0, run.dtype), recv_view(run), run.root);
}

void run_raw_mpi(Run& run) {
  const MPI_Datatype type = mpi_type(run.dtype);
  const int block = mpi_count(run.counts.recv);
  MPI_Scatter(run.send, block, type, run.recv, block, type, run.root, run.raw_comm);
}

}  // namespace

extern const OpHooks scatter_hooks{
    .name = "scatter", .reduces = false, .rooted = true, .has_data = true, .in_place_only = false,
    .out_of_place_only = true, .in_place = OpHooks::InPlace::Same, .counts = scatter_counts,
    .bus_factor = factor_gather, .init = init_pattern, .check = check, .run_mpidist = run_mpidist,
    .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
