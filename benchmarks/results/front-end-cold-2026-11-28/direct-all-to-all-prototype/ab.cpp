// MPI_Alltoall against mpidist's MPI path and the direct (segment + p2p) prototype, rotating.
#include <mpi.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>
#include "mpidist/mpidist.hpp"
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  mpidist::initialize(argc, argv);
  int r = mpidist::rank(), n = mpidist::world_size();
  MPI_Comm a, sync; MPI_Comm_dup(mpidist::world().native(), &a); MPI_Comm_dup(MPI_COMM_WORLD, &sync);
  const int iters = argc > 1 ? atoi(argv[1]) : 40;
  if (r == 0) std::printf("%10s %9s %7s %7s\n", "bytes/rank", "raw(us)", "md/raw", "dir/raw");
  for (size_t bytes = 64 << 10; bytes <= (16u << 20); bytes *= 4) {
    const size_t count = bytes / 4 / n * n, block = count / n;
    std::vector<float> in(count), o0(count), o1(count), o2(count);
    for (size_t i = 0; i < count; ++i) in[i] = float(r * 100003 + i);
    auto raw = [&] { MPI_Alltoall(in.data(), (int)block, MPI_FLOAT, o0.data(), (int)block, MPI_FLOAT, a); };
    auto md = [&](std::vector<float>& o, bool direct) {
      if (direct) setenv("MPIDIST_PROTO_DIRECT", "1", 1); else unsetenv("MPIDIST_PROTO_DIRECT");
      mpidist::all_to_all(std::span<const float>(in.data(), count), std::span<float>(o.data(), count));
    };
    const int it = bytes >= (4u << 20) ? std::max(6, iters / 4) : iters;
    std::vector<double> t[3];
    for (int i = 0; i < it + 3; ++i)
      for (int c = 0; c < 3; ++c) {
        int w = (c + i) % 3;
        MPI_Barrier(sync);
        double t0 = now();
        if (w == 0) raw(); else if (w == 1) md(o1, false); else md(o2, true);
        double dt = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, sync);
        if (i >= 3) t[w].push_back(dt);
      }
    if (o0 != o1 || o0 != o2) { std::fprintf(stderr, "rank %d: results differ at %zu\n", r, bytes); MPI_Abort(MPI_COMM_WORLD, 1); }
    double m[3];
    for (int c = 0; c < 3; ++c) { std::sort(t[c].begin(), t[c].end()); m[c] = t[c][t[c].size() / 2] * 1e6; }
    if (r == 0) std::printf("%10zu %9.1f %7.3f %7.3f\n", bytes, m[0], m[1] / m[0], m[2] / m[0]);
  }
  mpidist::finalize();
}
