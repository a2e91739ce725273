// gather: root ends with every rank's block in rank order (MPI_Gather). busbw = algbw × (n−1)/n.
#include "op_util.hpp"

namespace bench::ops {
namespace {

std::size_t check(const Run& run) {
  if (run.rank != run.root) return 0;  // only root receives
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::size_t wrong = 0;
    const std::size_t block = run.counts.send;
    const auto result = typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv);
    for (int r = 0; r < run.nranks; ++r)
      wrong += count_wrong(result.subspan(static_cast<std::size_t>(r) * block, block), 0, pattern_table<T>(r, run.nranks));
    return wrong;
  });
}

void run_mpidist(Run& run) {
  mpidist::gather(run.comm, send_view(run), run.rank == run.root ? recv_view(run) : mpidist::BufferView(nullptr, 0, run.dtype), run.root);
}

void run_raw_mpi(Run& run) {
  const MPI_Datatype type = mpi_type(run.dtype);
  const int block = mpi_count(run.counts.send);
  MPI_Gather(run.send, block, type, run.recv, block, type, run.root, run.raw_comm);
}

}  // namespace

extern const OpHooks gather_hooks{
    .name = "gather", .reduces = false, .rooted = true, .has_data = true, .in_place_only = false,
    .out_of_place_only = true, .in_place = OpHooks::InPlace::Same, .counts = gather_counts,
    .bus_factor = factor_gather, .init = init_pattern, .check = check, .run_mpidist = run_mpidist,
    .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
