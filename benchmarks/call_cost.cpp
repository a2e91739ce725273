// call_cost: what one small call costs on top of the MPI call it ends in. Loops of a small
// all_reduce (4 B and 1 KiB of float32, in place), an all_gather of one float32 a rank and of none
// (with MPIDIST_HOST_ALLREDUCE=mpi: the path across hosts), an all_to_all of one float32 a rank (the uneven
// collectives' front end; equal blocks, and the split-count form with the same counts) and an 8-byte ping-pong (send then recv; one-way time = half the round trip), mpidist against raw MPI on a duplicate of MPI_COMM_WORLD in the same
// run, the two loops interleaved rep by rep; medians of the reps and their ratio. `buffer_view` is
// no MPI call: what making a BufferView of a host span costs (the memory lookup), against nothing;
// of 4 bytes from the heap, and of 4 MiB that malloc maps (which the lookup cannot skip).
//
// Each collective's mpidist time is also split at its MPI calls: before them (the front end),
// inside, after, beside raw MPI's call alone (the MpiMarks wrappers below).
//
//   mpiexec -n 2 call_cost [--iters N] [--reps R] [--json [PATH]]
//   MPIDIST_BENCH=build/benchmarks/call_cost tests/hosts/bench_two_hosts.sh 1+1 OUT call_cost   (across two hosts)
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

// Where a call's time goes: this program defines the MPI collectives it times (and mpidist's own
// calls of them bind here too: the executable exports them) and notes when the first MPI call of a
// call starts and the last one ends. A call's time then splits into before MPI (the front end),
// inside it, and after it. Both sides pass through these wrappers, whose two clock reads a call
// count alike in both.
struct MpiMarks {
  bool on = false;
  std::int64_t first_in = 0, last_out = 0;  // steady_clock ns; first_in 0: no MPI call yet
};
MpiMarks marks;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <class F>
int marked(F&& call) {
  if (!marks.on) return call();
  const std::int64_t in = now_ns();
  if (marks.first_in == 0) marks.first_in = in;
  const int rc = call();
  marks.last_out = now_ns();
  return rc;
}

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

// The per-call split of mpidist's call (before, inside and after its MPI calls) and raw MPI's
// call, medians over `iters` calls; nothing where mpidist made no MPI call (the shared-memory paths).
struct Phases {
  bool seen = false;
  double before = 0, inside = 0, after = 0, raw = 0;
};

// Each side in a loop of its own, as in the timed runs: alternating them would put the other
// rank's skew from the last call into the first MPI call of the next.
Phases phases(Loop& l, int iters) {
  std::vector<double> before, inside, after, raw;
  marks.on = true;
  bool seen = true;
  MPI_Barrier(l.raw);
  for (int i = 0; i < iters && seen; ++i) {
    marks.first_in = 0;
    const std::int64_t start = now_ns();
    mpidist_call(l);
    const std::int64_t end = now_ns();
    seen = marks.first_in != 0;
    before.push_back((marks.first_in - start) / 1e3);
    inside.push_back((marks.last_out - marks.first_in) / 1e3);
    after.push_back((end - marks.last_out) / 1e3);
  }
  MPI_Barrier(l.raw);
  for (int i = 0; i < iters; ++i) {
    marks.first_in = 0;
    raw_call(l);
    raw.push_back((marks.last_out - marks.first_in) / 1e3);
  }
  marks.on = false;
  // Every rank made the same calls: any rank that saw none (a path without MPI) speaks for all.
  int all_seen = seen ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &all_seen, 1, MPI_INT, MPI_MIN, l.raw);
  if (all_seen == 0) return {};
  return {true, median(before), median(inside), median(after), median(raw)};
}

}  // namespace

// The wrappers (see MpiMarks), in the global namespace under MPI's own names.
extern "C" {
int MPI_Allreduce(const void* in, void* out, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return marked([&] { return PMPI_Allreduce(in, out, n, type, op, comm); });
}
int MPI_Allgather(const void* in, int n, MPI_Datatype type, void* out, int m, MPI_Datatype out_type, MPI_Comm comm) {
  return marked([&] { return PMPI_Allgather(in, n, type, out, m, out_type, comm); });
}
int MPI_Alltoall(const void* in, int n, MPI_Datatype type, void* out, int m, MPI_Datatype out_type, MPI_Comm comm) {
  return marked([&] { return PMPI_Alltoall(in, n, type, out, m, out_type, comm); });
}
}

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
  // --json alone: the JSON on stdout instead of the table; --json PATH: the table, and the JSON
  // into PATH (as mpidist-bench, so that tests/hosts/bench_two_hosts.sh can run this program).
  bool json = false;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) {
      if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) json_path = argv[i + 1];
      else json = true;
    }

  bool wrong = false;
  std::string rows;
  if (rank == 0 && !json && only == nullptr)
    std::printf("# ranks %d on %d node(s), %d calls a rep, %d reps, medians (us per call; p2p one way)\n"
                "# mpidist's call split at its MPI calls: before | inside | after, beside raw MPI's call\n"
                "%-20s %10s %10s %8s %9s %9s %9s %9s %9s\n",
                size, mpidist::num_nodes(), iters, reps, "case", "mpidist", "raw MPI", "ratio", "extra us", "before",
                "inside", "after", "raw MPI");
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
    // The split, for the collectives whose MPI calls are wrapped above.
    const bool split = c.kind == Kind::AllReduce || c.kind == Kind::AllGather || c.kind == Kind::AllToAll;
    const Phases ph = split ? phases(l, iters) : Phases{};
    if (rank == 0 && !json) {
      std::printf("%-20s %10.3f %10.3f %8.3f %9.3f", c.name, a, b, a / b, a - b);
      if (ph.seen) std::printf(" %9.3f %9.3f %9.3f %9.3f\n", ph.before, ph.inside, ph.after, ph.raw);
      else std::printf(" %9s %9s %9s %9s\n", "-", "-", "-", "-");
    }
    char row[512];
    std::snprintf(row, sizeof row, "%s{\"case\":\"%s\",\"ranks\":%d,\"iters\":%d,\"reps\":%d,\"mpidist_us\":%.4f,"
                  "\"mpi_us\":%.4f,\"ratio\":%.4f", rows.empty() ? "" : ",", c.name, size, iters, reps, a, b, a / b);
    rows += row;
    if (ph.seen) {
      std::snprintf(row, sizeof row, ",\"before_mpi_us\":%.4f,\"inside_mpi_us\":%.4f,\"after_mpi_us\":%.4f,"
                    "\"raw_mpi_call_us\":%.4f", ph.before, ph.inside, ph.after, ph.raw);
      rows += row;
    }
    rows += '}';
  }
  const std::string document = "{\"benchmark\":\"call_cost\",\"nodes\":" + std::to_string(mpidist::num_nodes()) +
                               ",\"rows\":[" + rows + "]}\n";
  if (rank == 0 && json) std::fputs(document.c_str(), stdout);
  if (rank == 0 && json_path != nullptr) {
    std::FILE* file = std::fopen(json_path, "w");
    if (file == nullptr || std::fputs(document.c_str(), file) < 0 || std::fclose(file) != 0) {
      std::fprintf(stderr, "call_cost: cannot write %s\n", json_path);
      wrong = true;
    }
  }
  if (rank == 0 && wrong) std::fprintf(stderr, "call_cost: a wrong result\n");
  MPI_Comm_free(&raw);
  return wrong ? 1 : 0;
}
