// object_all_gather: mpidist::all_gather(const std::vector<T>&) against MPI_Allgather of the
// sizes, then MPI_Allgatherv of the elements into one reused buffer. busbw = algbw × (n−1)/n.
#include <numeric>

#include "object_util.hpp"

namespace bench::ops {
namespace {

ObjectState state;
std::vector<std::uint64_t> raw_sizes;
std::vector<int> raw_counts, raw_displs;

void init(Run& run) {
  require_objects("object_all_gather");
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto& input = as_vector<T>(state.input);
    input.assign(run.counts.send, T{});
    fill_pattern(std::span<T>(input), run.rank, 0, run.nranks, mpidist::ReduceOp::Sum);
    as_vector<T>(state.raw).clear();
    state.result.reset();
  });
}

std::size_t check(const Run& run) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::size_t block = run.counts.send;
    std::size_t wrong = 0;
    if (run.side == 0) {
#if BENCH_HAVE_OBJECTS
      const auto* got = std::any_cast<std::vector<std::vector<T>>>(&state.result);
      if (got == nullptr || got->size() != static_cast<std::size_t>(run.nranks)) return run.counts.recv + 1;
      for (int r = 0; r < run.nranks; ++r) {
        const auto& v = (*got)[static_cast<std::size_t>(r)];
        wrong += v.size() != block ? block + 1 : count_wrong(std::span<const T>(v), 0, pattern_table<T>(r, run.nranks));
      }
#endif
      return wrong;
    }
    const auto& raw = as_vector<T>(state.raw);
    if (raw.size() != run.counts.recv) return run.counts.recv + 1;
    for (int r = 0; r < run.nranks; ++r)
      wrong += count_wrong(std::span<const T>(raw).subspan(static_cast<std::size_t>(r) * block, block), 0,
                           pattern_table<T>(r, run.nranks));
    return wrong;
  });
}

void run_mpidist([[maybe_unused]] Run& run) {
#if BENCH_HAVE_OBJECTS
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    state.result = mpidist::all_gather(run.comm, as_vector<T>(state.input));
  });
#endif
}

void run_raw_mpi(Run& run) {
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto& input = as_vector<T>(state.input);
    auto& out = as_vector<T>(state.raw);
    const auto n = static_cast<std::size_t>(run.nranks);
    raw_sizes.resize(n);
    raw_counts.resize(n);
    raw_displs.resize(n);
    std::uint64_t size = input.size();
    MPI_Allgather(&size, 1, MPI_UINT64_T, raw_sizes.data(), 1, MPI_UINT64_T, run.raw_comm);
    for (std::size_t r = 0; r < n; ++r) raw_counts[r] = mpi_count(raw_sizes[r]);
    std::exclusive_scan(raw_counts.begin(), raw_counts.end(), raw_displs.begin(), 0);
    out.resize(std::accumulate(raw_sizes.begin(), raw_sizes.end(), std::uint64_t{0}));
    const MPI_Datatype type = mpi_type(run.dtype);
    MPI_Allgatherv(input.data(), mpi_count(size), type, out.data(), raw_counts.data(), raw_displs.data(), type,
                   run.raw_comm);
  });
}

}  // namespace

extern const OpHooks object_all_gather_hooks{
    .name = "object_all_gather", .reduces = false, .rooted = false, .has_data = true, .in_place_only = true, .objects = true,
    .in_place = OpHooks::InPlace::Same, .counts = gather_counts, .bus_factor = factor_gather, .init = init,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
