// sendrecv: ping-pong between pairs of ranks (0↔1, 2↔3, ...; an odd last rank sits out). The
// time is one round trip, so one-way latency is half of it; busbw = algbw × 2 is the bandwidth
// of each direction (the size crosses twice per round trip).
#include "op_util.hpp"
#include "mpidist/p2p.hpp"

namespace bench::ops {
namespace {

int partner(const Run& run) {
  const int other = run.rank ^ 1;
  return other < run.nranks ? other : -1;
}

std::size_t check(const Run& run) {
  const int other = partner(run);
  if (other < 0) return 0;
  return with_dtype(run.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return count_wrong(typed<T>(static_cast<const std::byte*>(run.host_recv), run.counts.recv), 0,
                       pattern_table<T>(other, run.nranks));
  });
}

// The even rank sends first; the odd one answers with its own buffer.
void run_mpidist(Run& run) {
  const int other = partner(run);
  if (other < 0) return;
  if (run.rank % 2 == 0) {
    mpidist::send(run.comm, send_view(run), other);
    mpidist::recv(run.comm, recv_view(run), other);
  } else {
    mpidist::recv(run.comm, recv_view(run), other);
    mpidist::send(run.comm, send_view(run), other);
  }
}

void run_raw_mpi(Run& run) {
  const int other = partner(run);
  if (other < 0) return;
  const MPI_Datatype type = mpi_type(run.dtype);
  const int count = mpi_count(run.counts.send);
  if (run.rank % 2 == 0) {
    MPI_Send(run.send, count, type, other, 0, run.raw_comm);
    MPI_Recv(run.recv, count, type, other, 0, run.raw_comm, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(run.recv, count, type, other, 0, run.raw_comm, MPI_STATUS_IGNORE);
    MPI_Send(run.send, count, type, other, 0, run.raw_comm);
  }
}

double factor_two(int) { return 2.0; }

}  // namespace

extern const OpHooks sendrecv_hooks{
    .name = "sendrecv", .reduces = false, .rooted = false, .has_data = true, .in_place_only = false,
    .out_of_place_only = true, .in_place = OpHooks::InPlace::Same, .counts = whole_counts, .bus_factor = factor_two,
    .init = init_pattern, .check = check, .run_mpidist = run_mpidist, .run_raw_mpi = run_raw_mpi, .run_raw_nccl = nullptr};

}  // namespace bench::ops
