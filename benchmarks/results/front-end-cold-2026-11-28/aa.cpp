// A/A: MPI_Alltoall on two sibling dups, on mpidist's own communicator, and mpidist::all_to_all, rotating.
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
  MPI_Comm own = mpidist::world().native();
  MPI_Comm a, b, sync; MPI_Comm_dup(own, &a); MPI_Comm_dup(own, &b); MPI_Comm_dup(MPI_COMM_WORLD, &sync);
  const int iters = argc > 1 ? atoi(argv[1]) : 40;
  const char* names[4] = {"rawA", "rawB", "rawOwn", "mpidist"};
  if (r == 0) std::printf("%10s %9s %7s %7s %7s\n", "bytes/rank", "rawA(us)", "B/A", "own/A", "md/A");
  for (size_t bytes = 16 << 10; bytes <= (4u << 20); bytes *= 4) {
    const size_t count = bytes / 4, block = count / n;
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = float(r * 31 + i % 1000);
    auto raw = [&](MPI_Comm c) { MPI_Alltoall(in.data(), (int)block, MPI_FLOAT, out.data(), (int)block, MPI_FLOAT, c); };
    const int it = bytes >= (4u << 20) ? iters / 2 : iters;
    std::vector<double> t[4];
    for (int i = 0; i < it + 4; ++i)
      for (int c = 0; c < 4; ++c) {
        int w = (c + i) % 4;
        MPI_Barrier(sync);
        double t0 = now();
        if (w == 0) raw(a); else if (w == 1) raw(b); else if (w == 2) raw(own);
        else mpidist::all_to_all(std::span<const float>(in.data(), block * n), std::span<float>(out.data(), block * n));
        double dt = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, sync);
        if (i >= 4) t[w].push_back(dt);
      }
    double m[4];
    for (int c = 0; c < 4; ++c) { std::sort(t[c].begin(), t[c].end()); m[c] = t[c][t[c].size() / 2] * 1e6; }
    if (r == 0) std::printf("%10zu %9.1f %7.3f %7.3f %7.3f\n", bytes, m[0], m[1] / m[0], m[2] / m[0], m[3] / m[0]);
  }
  (void)names;
  mpidist::finalize();
}
