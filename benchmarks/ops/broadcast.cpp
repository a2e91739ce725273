// broadcast: root's buffer reaches every rank. mpidist's API is in place, so this op always is.
// busbw = algbw.
#include "../raw_nccl.hpp"
#include "op_util.hpp"

namespace bench::ops {
namespace {

void init(Run& run) {
  std::memset(run.host_recv, 0, run.counts.recv * mpidist::size_of(run.dtype));
  if (run.rank != run.root) return;
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_pattern(typed<T>(run.host_recv, run.counts.recv), run.root, 0, run.nranks, mpidist::ReduceOp::Sum);
  });
}

std::size_t check(const Run& run) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return count_wrong(typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv), 0,
                       pattern_table<T>(run.root, run.nranks));
  });
}

void run_mpidist(Run& run) { mpidist::broadcast(run.comm, recv_view(run), run.root); }

void run_raw_mpi(Run& run) {
  MPI_Bcast(run.recv, mpi_count(run.counts.recv), mpi_type(run.dtype), run.root, run.raw_comm);
}

}  // namespace

extern const OpHooks broadcast_hooks{
    .name = "broadcast", .reduces = false, .rooted = true, .has_data = true, .in_place_only = true,
    .in_place = OpHooks::InPlace::Same, .counts = whole_counts, .bus_factor = factor_one, .init = init,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nccl_broadcast};

}  // namespace bench::ops
