// Two duplicates of the world, MPI_Alltoall interleaved as mpidist-bench does: is one comm slower?
#include <mpi.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm a, b, sync; MPI_Comm_dup(MPI_COMM_WORLD, &a); MPI_Comm_dup(MPI_COMM_WORLD, &b); MPI_Comm_dup(MPI_COMM_WORLD, &sync);
  const int iters = 50;
  for (long bytes : {65536L, 262144L, 1048576L, 4194304L}) {
    std::vector<float> in(bytes / 4, 1.f), out(bytes / 4);
    const int block = bytes / 4 / size;
    std::vector<double> ta(iters), tb(iters);
    for (int it = 0; it < iters + 5; ++it)
      for (int k = 0; k < 2; ++k) {
        MPI_Comm c = ((k + it) % 2 == 0) ? a : b;
        MPI_Barrier(sync);
        double t0 = MPI_Wtime();
        MPI_Alltoall(in.data(), block, MPI_FLOAT, out.data(), block, MPI_FLOAT, c);
        double dt = MPI_Wtime() - t0;
        if (it >= 5) (c == a ? ta : tb)[it - 5] = dt;
      }
    MPI_Allreduce(MPI_IN_PLACE, ta.data(), iters, MPI_DOUBLE, MPI_MAX, sync);
    MPI_Allreduce(MPI_IN_PLACE, tb.data(), iters, MPI_DOUBLE, MPI_MAX, sync);
    std::sort(ta.begin(), ta.end()); std::sort(tb.begin(), tb.end());
    if (rank == 0) std::printf("%8ld a %9.2f b %9.2f a/b %.3f\n", bytes, ta[iters/2]*1e6, tb[iters/2]*1e6, ta[iters/2]/tb[iters/2]);
  }
  MPI_Finalize();
}
