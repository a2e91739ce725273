// object_broadcast: `v = mpidist::broadcast(std::move(v), root)` on a std::vector<T> against
// MPI_Bcast of the size, then of the elements into a reused buffer. busbw = algbw.
#include "object_util.hpp"

namespace bench::ops {
namespace {

ObjectState state;

void init(Run& run) {
  require_objects("object_broadcast");
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto& input = as_vector<T>(state.input);
    // Only root's value matters; the others pass an empty vector, as a user would.
    input.assign(run.rank == run.root ? run.counts.recv : 0, T{});
    fill_pattern(std::span<T>(input), run.root, 0, run.nranks, mpidist::ReduceOp::Sum);
    as_vector<T>(state.result).clear();
    as_vector<T>(state.raw).clear();
  });
}

std::size_t check(const Run& run) {
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Root keeps its value where it was (both sides); only the other ranks receive.
    std::any& slot = run.rank == run.root ? state.input : run.side == 0 ? state.result : state.raw;
    const auto& got = as_vector<T>(slot);
    if (got.size() != run.counts.recv) return run.counts.recv + 1;  // a wrong size is all wrong
    return count_wrong(std::span<const T>(got), 0, pattern_table<T>(run.root, run.nranks));
  });
}

void run_mpidist([[maybe_unused]] Run& run) {
#if BENCH_HAVE_OBJECTS
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // The repeated-broadcast idiom of objects.hpp: root's value is moved through, the others
    // receive into the vector they pass in (no reallocation, no zero-fill), like the raw side's
    // reused buffer. `broadcast(const T&)` would also allocate a fresh vector per call.
    std::any& slot = run.rank == run.root ? state.input : state.result;
    auto& value = as_vector<T>(slot);
    value = mpidist::broadcast(run.comm, std::move(value), run.root);
  });
#endif
}

void run_raw_mpi(Run& run) {
  with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto& input = as_vector<T>(state.input);
    auto& out = as_vector<T>(state.raw);
    std::uint64_t size = input.size();
    MPI_Bcast(&size, 1, MPI_UINT64_T, run.root, run.raw_comm);
    if (run.rank != run.root) out.resize(size);  // no allocation after the first call
    T* data = run.rank == run.root ? input.data() : out.data();
    MPI_Bcast(data, mpi_count(size), mpi_type(run.dtype), run.root, run.raw_comm);
  });
}

}  // namespace

extern const OpHooks object_broadcast_hooks{
    .name = "object_broadcast", .reduces = false, .rooted = true, .has_data = true, .in_place_only = true, .objects = true,
    .in_place = OpHooks::InPlace::Same, .counts = whole_counts, .bus_factor = factor_one, .init = init,
    .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
