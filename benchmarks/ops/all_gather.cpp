// all_gather: every rank ends with all ranks' blocks in rank order. busbw = algbw × (n−1)/n.
#include "../raw_nccl.hpp"
#include "op_util.hpp"

namespace bench::ops {
namespace {

std::size_t check(const Run& run) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::size_t wrong = 0;
    const std::size_t block = run.counts.send;
    for (int r = 0; r < run.nranks; ++r)
      wrong += count_wrong(typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv)
                               .subspan(static_cast<std::size_t>(r) * block, block),
                           0, pattern_table<T>(r, run.nranks));
    return wrong;
  });
}

void run_mpidist(Run& run) { mpidist::all_gather(run.comm, send_view(run), recv_view(run)); }

void run_raw_mpi(Run& run) {
  const MPI_Datatype type = mpi_type(run.dtype);
  const int block = mpi_count(run.counts.send);
  MPI_Allgather(run.in_place ? MPI_IN_PLACE : run.send, block, type, run.recv, block, type, run.raw_comm);
}

}  // namespace

extern const OpHooks all_gather_hooks{
    .name = "all_gather", .reduces = false, .rooted = false, .has_data = true, .in_place_only = false,
    .in_place = OpHooks::InPlace::SendInRecv, .counts = gather_counts, .bus_factor = factor_gather, .init = init_pattern,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nccl_all_gather};

}  // namespace bench::ops
