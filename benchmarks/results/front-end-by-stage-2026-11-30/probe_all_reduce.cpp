// mpidist::all_to_all vs MPI_Alltoall on mpidist's comm vs two own dups, interleaved.
#include <mpi.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include "mpidist/mpidist.hpp"
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  auto world = mpidist::world();
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm a, b, sync; MPI_Comm_dup(MPI_COMM_WORLD, &a); MPI_Comm_dup(MPI_COMM_WORLD, &b); MPI_Comm_dup(MPI_COMM_WORLD, &sync);
  MPI_Comm m = world.native();
  const char* names[] = {"mpidist", "raw@mpidist", "raw@dupA", "raw@dupB"};
  const int C = 4;
  if (r == 0) std::printf("%10s %10s %10s %10s %10s   ratios to dupA\n", "bytes", names[0], names[1], names[2], names[3]);
  for (size_t bytes : {256ul, 65536ul, 262144ul, 1048576ul, 4194304ul}) {
    const size_t block = bytes / n / 4;  // floats
    std::vector<float> in(block * n), out(block * n);
    for (size_t i = 0; i < in.size(); ++i) in[i] = float(r * 1000 + i);
    const int it = bytes >= (4u << 20) ? 40 : 200;
    std::vector<double> t[C];
    for (int i = 0; i < it + 5; ++i)
      for (int c = 0; c < C; ++c) {
        int w = (c + i) % C;
        MPI_Barrier(sync);
        double t0 = now();
        if (w == 0) mpidist::all_reduce(std::span<const float>(in), std::span<float>(out));
        else MPI_Allreduce(in.data(), out.data(), (int)in.size(), MPI_FLOAT, MPI_SUM, w == 1 ? m : w == 2 ? a : b);
        double dt = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, sync);
        if (i >= 5) t[w].push_back(dt);
      }
    double med[C];
    for (int c = 0; c < C; ++c) { std::sort(t[c].begin(), t[c].end()); med[c] = t[c][t[c].size() / 2] * 1e6; }
    if (r == 0) std::printf("%10zu %10.1f %10.1f %10.1f %10.1f   %.3f %.3f %.3f\n", bytes, med[0], med[1], med[2], med[3], med[0]/med[2], med[1]/med[2], med[3]/med[2]);
  }
  MPI_Comm_free(&a); MPI_Comm_free(&b); MPI_Comm_free(&sync);
}
