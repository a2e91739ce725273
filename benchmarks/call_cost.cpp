// call_cost: what one small call costs on top of the MPI call it ends in. Loops of a small
// all_reduce (4 B and 1 KiB of float32, in place), an all_gather of one float32 a rank and of none
// (with MPIDIST_HOST_ALLREDUCE=mpi: the path across hosts), an all_to_all of one float32 a rank (the uneven
// collectives' front end; equal blocks, and the split-count form with the same counts) and an 8-byte ping-pong (send then recv; one-way time = half the round trip), mpidist against raw MPI on a duplicate of MPI_COMM_WORLD in the same
// run, the two loops interleaved rep by rep; medians of the reps and their ratio. `buffer_view` is
// no MPI call: what making a BufferView of a host span costs (the memory lookup), against nothing;
// of 4 bytes from the heap, and of 4 MiB that malloc maps (which the lookup cannot skip).
//
//   mpiexec -n 2 call_cost [--iters N] [--reps R] [--json]
//   valgrind --tool=callgrind --toggle-collect='*run_mpidist*' call_cost --only all_reduce_4B --side mpidist
//
// --only/--side run one loop, once, so that callgrind's --toggle-collect on run_mpidist or run_raw
// counts the instructions of exactly `iters` calls (benchmarks/results/call-cost-*/README.md).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mpidist/mpidist.hpp"

namespace {

// View: a BufferView made from a host span (which memory it is: on a machine with a GPU, the
// CUDA runtime's pointer query) against nothing; every call of the other kinds pays it per buffer.
enum class Kind { AllReduce, AllGather, AllToAll, AllToAllSplit, PingPong, View };

struct Case {
  const char* name;
  int elements;  // float32 elements (all_reduce; all_to_all: a block's) or bytes (ping-pong)
  Kind kind;
};

constexpr Case cases[] = {{"all_reduce_4B", 1, Kind::AllReduce},
                          {"all_reduce_1KiB", 256, Kind::AllReduce},
                          {"all_gather_4B", 1, Kind::AllGather},
                          {"all_gather_0B", 0, Kind::AllGather},
                          {"all_to_all_4B", 1, Kind::AllToAll},
                          {"all_to_all_split_4B", 1, Kind::AllToAllSplit},
                          {"all_to_all_split_0B", 0, Kind::AllToAllSplit},
                          {"p2p_8B", 8, Kind::PingPong},
                          {"buffer_view", 1, Kind::View},
                          {"buffer_view_4MiB", 1 << 20, Kind::View}};  // malloc maps it: not in the heap

volatile int sink = 0;

struct Loop {
  const Case& c;
  MPI_Comm raw;  // raw MPI's own duplicate of the world
  int rank;
  std::vector<float> floats;  // all_reduce's buffer, all_to_all's in
  std::vector<float> out;     // all_to_all's out
  std::vector<std::uint8_t> bytes;
  std::vector<std::size_t> counts;  // the split form's counts: `elements` for every rank
  std::vector<int> mpi_counts, mpi_displs;
};

// One call (or, for the ping-pong, one round trip) of each side.
void mpidist_call(Loop& l) {
  if (l.c.kind == Kind::AllReduce) return mpidist::all_reduce(std::span<float>(l.floats));
  if (l.c.kind == Kind::View) {
    sink = mpidist::BufferView(std::span<float>(l.floats)).device();
    return;
  }
  if (l.c.kind == Kind::AllGather) return mpidist::all_gather(std::span<const float>(l.floats), std::span<float>(l.out));
  if (l.c.kind == Kind::AllToAll) return mpidist::all_to_all(std::span<const float>(l.floats), std::span<float>(l.out));
  if (l.c.kind == Kind::AllToAllSplit)
    return mpidist::all_to_all(std::span<const float>(l.floats), l.counts, std::span<float>(l.out), l.counts);
  auto view = std::span<std::uint8_t>(l.bytes);
  if (l.rank == 0) {
    mpidist::send(view, 1);
    mpidist::recv(view, 1);
  } else if (l.rank == 1) {
    mpidist::recv(view, 0);
    mpidist::send(view, 0);
  }
}
void raw_call(Loop& l) {
  if (l.c.kind == Kind::View) {
    sink = l.floats.empty() ? 0 : -1;
    return;
  }
  if (l.c.kind == Kind::AllReduce) {
    MPI_Allreduce(MPI_IN_PLACE, l.floats.data(), l.c.elements, MPI_FLOAT, MPI_SUM, l.raw);
    return;
  }
  if (l.c.kind == Kind::AllGather) {
    MPI_Allgather(l.floats.data(), l.c.elements, MPI_FLOAT, l.out.data(), l.c.elements, MPI_FLOAT, l.raw);
    return;
  }
  if (l.c.kind == Kind::AllToAll) {
    MPI_Alltoall(l.floats.data(), l.c.elements, MPI_FLOAT, l.out.data(), l.c.elements, MPI_FLOAT, l.raw);
    return;
  }
  if (l.c.kind == Kind::AllToAllSplit) {
    MPI_Alltoallv(l.floats.data(), l.mpi_counts.data(), l.mpi_displs.data(), MPI_FLOAT, l.out.data(),
                  l.mpi_counts.data(), l.mpi_displs.data(), MPI_FLOAT, l.raw);
    return;
  }
  const int n = l.c.elements;
  if (l.rank == 0) {
    MPI_Send(l.bytes.data(), n, MPI_BYTE, 1, 0, l.raw);
    MPI_Recv(l.bytes.data(), n, MPI_BYTE, 1, 0, l.raw, MPI_STATUS_IGNORE);
  } else if (l.rank == 1) {
    MPI_Recv(l.bytes.data(), n, MPI_BYTE, 0, 0, l.raw, MPI_STATUS_IGNORE);
    MPI_Send(l.bytes.data(), n, MPI_BYTE, 0, 0, l.raw);
  }
}

// Named, never inlined: callgrind's --toggle-collect counts exactly these loops.
[[gnu::noinline]] void run_mpidist(Loop& l, int iters) {
  for (int i = 0; i < iters; ++i) mpidist_call(l);
}
[[gnu::noinline]] void run_raw(Loop& l, int iters) {
  for (int i = 0; i < iters; ++i) raw_call(l);
}

// Microseconds per call (one way for the ping-pong), the slowest rank's.
double timed(Loop& l, int iters, bool mpidist_side) {
  MPI_Barrier(l.raw);
  const auto start = std::chrono::steady_clock::now();
  mpidist_side ? run_mpidist(l, iters) : run_raw(l, iters);
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iters;
  if (l.c.kind == Kind::PingPong) us /= 2;
  MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, l.raw);
  return us;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int int_arg(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}
const char* text_arg(int argc, char** argv, const char* flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm raw = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  const int iters = int_arg(argc, argv, "--iters", 20000);
  const int reps = int_arg(argc, argv, "--reps", 11);
  const char* only = text_arg(argc, argv, "--only");
  const char* side = text_arg(argc, argv, "--side");
  bool json = false;
  for (int i = 1; i < argc; ++i) json |= std::strcmp(argv[i], "--json") == 0;

  bool wrong = false;
  std::string rows;
  if (rank == 0 && !json && only == nullptr)
    std::printf("# ranks %d, %d calls a rep, %d reps, medians (us per call; p2p one way)\n%-20s %10s %10s %8s %9s\n",
                size, iters, reps, "case", "mpidist", "raw MPI", "ratio", "extra us");
  for (const Case& c : cases) {
    if (only != nullptr && std::strcmp(only, c.name) != 0) continue;
    const bool ping_pong = c.kind == Kind::PingPong;
    if (ping_pong && size < 2) continue;  // a blocking send to oneself is an Error
    const bool to_all = c.kind == Kind::AllToAll || c.kind == Kind::AllToAllSplit;
    const bool gather = c.kind == Kind::AllGather;
    const std::size_t floats = ping_pong ? 0 : static_cast<std::size_t>(c.elements) * (to_all ? size : 1);
    const std::size_t outs = to_all ? floats : gather ? floats * static_cast<std::size_t>(size) : 0;
    Loop l{c, raw, rank, std::vector<float>(floats, 1.0f), std::vector<float>(outs),
           std::vector<std::uint8_t>(c.elements, 1), {}, {}, {}};
    // Buffers of no elements still at two addresses: MPICH takes two null ones for aliased buffers.
    l.floats.reserve(1), l.out.reserve(1);
    for (int r = 0; to_all && r < size; ++r) {
      l.counts.push_back(static_cast<std::size_t>(c.elements));
      l.mpi_counts.push_back(c.elements);
      l.mpi_displs.push_back(r * c.elements);
    }
    if (only != nullptr) {  // one loop, for callgrind
      if (side != nullptr && std::strcmp(side, "raw") == 0) run_raw(l, iters);
      else run_mpidist(l, iters);
      continue;
    }
    for (int i = 0; i < 100; ++i) mpidist_call(l), raw_call(l);  // warm: connections, segment, caches
    std::vector<double> ours, theirs;
    for (int r = 0; r < reps; ++r) {  // interleaved, alternating which goes first
      if (r % 2) ours.push_back(timed(l, iters, true)), theirs.push_back(timed(l, iters, false));
      else theirs.push_back(timed(l, iters, false)), ours.push_back(timed(l, iters, true));
    }
    // The data check: a sum of ones doubles every call, so values are checked on a fresh call.
    if (c.kind == Kind::AllReduce) {
      std::fill(l.floats.begin(), l.floats.end(), 1.0f);
      mpidist::all_reduce(std::span<float>(l.floats));
      for (float v : l.floats) wrong |= v != static_cast<float>(size);
    } else if (to_all || gather) {  // block i of out is rank i's
      for (std::size_t i = 0; i < l.floats.size(); ++i) l.floats[i] = static_cast<float>(rank);
      mpidist_call(l);
      for (std::size_t i = 0; i < l.out.size(); ++i) wrong |= l.out[i] != static_cast<float>(i / c.elements);
    }
    const double a = median(ours), b = median(theirs);
    if (rank == 0 && !json) std::printf("%-20s %10.3f %10.3f %8.3f %9.3f\n", c.name, a, b, a / b, a - b);
    char row[256];
    std::snprintf(row, sizeof row, "%s{\"case\":\"%s\",\"ranks\":%d,\"iters\":%d,\"reps\":%d,\"mpidist_us\":%.4f,"
                  "\"mpi_us\":%.4f,\"ratio\":%.4f}", rows.empty() ? "" : ",", c.name, size, iters, reps, a, b, a / b);
    rows += row;
  }
  if (rank == 0 && json) std::printf("{\"benchmark\":\"call_cost\",\"rows\":[%s]}\n", rows.c_str());
  if (rank == 0 && wrong) std::fprintf(stderr, "call_cost: a wrong result\n");
  MPI_Comm_free(&raw);
  return wrong ? 1 : 0;
}
