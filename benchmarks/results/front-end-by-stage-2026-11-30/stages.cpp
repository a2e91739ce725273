// mpidist::all_to_all at bypass levels 0-3 vs MPI_Alltoall on a dup, interleaved.
#include <mpi.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include "mpidist/mpidist.hpp"
extern "C" int mpidist_probe_bypass;
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm a, sync; MPI_Comm_dup(MPI_COMM_WORLD, &a); MPI_Comm_dup(MPI_COMM_WORLD, &sync);
  const int C = 5;
  const char* names[C] = {"full", "b1", "b2", "b3", "raw"};
  if (r == 0) std::printf("%10s %9s %9s %9s %9s %9s   full/raw b1/raw b2/raw b3/raw\n", "bytes", names[0], names[1], names[2], names[3], names[4]);
  for (size_t bytes : {256ul, 65536ul, 262144ul, 1048576ul}) {
    const size_t block = bytes / n / 4;
    std::vector<float> in(block * n), out(block * n);
    for (size_t i = 0; i < in.size(); ++i) in[i] = float(r * 1000 + i);
    const int it = 300;
    std::vector<double> t[C];
    for (int i = 0; i < it + 5; ++i)
      for (int c = 0; c < C; ++c) {
        int w = (c + i) % C;
        MPI_Barrier(sync);
        double t0 = now();
        if (w < 4) { mpidist_probe_bypass = w; mpidist::all_to_all(std::span<const float>(in), std::span<float>(out)); }
        else MPI_Alltoall(in.data(), (int)block, MPI_FLOAT, out.data(), (int)block, MPI_FLOAT, a);
        double dt = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, sync);
        if (i >= 5) t[w].push_back(dt);
      }
    double med[C];
    for (int c = 0; c < C; ++c) { std::sort(t[c].begin(), t[c].end()); med[c] = t[c][t[c].size() / 2] * 1e6; }
    if (r == 0) std::printf("%10zu %9.1f %9.1f %9.1f %9.1f %9.1f   %.3f %.3f %.3f %.3f\n", bytes, med[0], med[1], med[2], med[3], med[4], med[0]/med[4], med[1]/med[4], med[2]/med[4], med[3]/med[4]);
  }
  MPI_Comm_free(&a); MPI_Comm_free(&sync);
}
