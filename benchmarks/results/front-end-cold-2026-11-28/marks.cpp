#include <mpi.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>
#include "mpidist/mpidist.hpp"
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static double t_in, t_out;
extern "C" int MPI_Alltoall(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm c) {
  t_in = now();
  int rv = PMPI_Alltoall(s, sc, st, r, rc, rt, c);
  t_out = now();
  return rv;
}
int main(int argc, char** argv) {
  mpidist::initialize(argc, argv);
  int n = mpidist::world_size(), rank = mpidist::rank();
  const size_t count = size_t(atoi(argv[1])) / 4, block = count / n;
  const int iters = atoi(argv[2]);
  std::vector<float> in(count), out(count);
  std::vector<double> pre, post;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    mpidist::all_to_all(std::span<const float>(in.data(), block * n), std::span<float>(out.data(), block * n));
    double t1 = now();
    pre.push_back((t_in - t0) * 1e6); post.push_back((t1 - t_out) * 1e6);
  }
  std::sort(pre.begin(), pre.end()); std::sort(post.begin(), post.end());
  std::printf("rank %d: before MPI median %.2f us p90 %.2f; after median %.2f p90 %.2f\n", rank, pre[iters/2], pre[iters*9/10], post[iters/2], post[iters*9/10]);
  mpidist::finalize();
}
