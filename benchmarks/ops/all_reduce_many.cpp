// all_reduce_many: --many K buffers of the step's size reduced in one call (tensor fusion), against
// K separate MPI_Allreduce calls. In place, as the API is; busbw as all_reduce over all K.
#include <vector>

#include "op_util.hpp"

namespace bench::ops {
namespace {

std::size_t per_buffer(const Run& run) { return run.counts.recv / static_cast<std::size_t>(run.options->many); }

std::size_t check(const Run& run) { return count_wrong_reduction(run); }

void run_mpidist(Run& run) {
  const std::size_t n = per_buffer(run);
  const std::size_t bytes = n * mpidist::size_of(run.dtype);
  std::vector<mpidist::BufferView> views;
  views.reserve(static_cast<std::size_t>(run.options->many));
  for (int k = 0; k < run.options->many; ++k)
    views.emplace_back(static_cast<std::byte*>(run.recv) + static_cast<std::size_t>(k) * bytes, n, run.dtype);
  mpidist::all_reduce_many(run.comm, views, run.redop);
}

void run_raw_mpi(Run& run) {
  const std::size_t n = per_buffer(run);
  const std::size_t bytes = n * mpidist::size_of(run.dtype);
  for (int k = 0; k < run.options->many; ++k) {
    void* buffer = static_cast<std::byte*>(run.recv) + static_cast<std::size_t>(k) * bytes;
    MPI_Allreduce(MPI_IN_PLACE, buffer, mpi_count(n), mpi_type(run.dtype), mpi_op(run.redop, run.dtype), run.raw_comm);
    finish_avg(run, buffer, n);
  }
}

}  // namespace

extern const OpHooks all_reduce_many_hooks{
    .name = "all_reduce_many", .reduces = true, .rooted = false, .has_data = true, .in_place_only = true,
    .objects = false, .many = true, .in_place = OpHooks::InPlace::Same, .counts = whole_counts,
    .bus_factor = factor_all_reduce, .init = init_pattern, .check = check, .run_mpidist = run_mpidist,
    .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
