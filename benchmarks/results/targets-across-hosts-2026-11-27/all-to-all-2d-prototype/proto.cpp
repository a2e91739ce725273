// Prototype: MPI_Alltoall against a 2D all_to_all (local alltoall, then one exchange with the same
// local index on the other node), 2 nodes of L ranks, node-contiguous. Interleaved, barrier before
// each call, median of the slowest rank's time.
#include <mpi.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm a, b, local, cross;
  MPI_Comm_dup(MPI_COMM_WORLD, &a); MPI_Comm_dup(MPI_COMM_WORLD, &b);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int l, L; MPI_Comm_rank(local, &l); MPI_Comm_size(local, &L);
  MPI_Comm_split(MPI_COMM_WORLD, l, rank, &cross);
  int n, N; MPI_Comm_rank(cross, &n); MPI_Comm_size(cross, &N);
  if (N * L != size || N != 2) { if (!rank) printf("needs 2 equal nodes\n"); MPI_Finalize(); return 0; }
  const int iters = argc > 1 ? atoi(argv[1]) : 30;
  for (long bytes = 4096; bytes <= (16L << 20); bytes *= 4) {   // per rank in total
    const long B = bytes / size;  // block bytes
    std::vector<char> in(bytes), out(bytes), out2(bytes), tmp(L * B);
    for (long i = 0; i < bytes; ++i) in[i] = char(rank * 31 + i);
    auto mpi = [&] { MPI_Alltoall(in.data(), B, MPI_BYTE, out.data(), B, MPI_BYTE, a); };
    auto twod = [&] {
      const int other = 1 - n;
      MPI_Request r[2];
      MPI_Alltoall(in.data() + other * L * B, B, MPI_BYTE, tmp.data(), B, MPI_BYTE, local);
      MPI_Irecv(out2.data() + other * L * B, L * B, MPI_BYTE, other, 0, cross, &r[0]);
      MPI_Isend(tmp.data(), L * B, MPI_BYTE, other, 0, cross, &r[1]);
      MPI_Alltoall(in.data() + n * L * B, B, MPI_BYTE, out2.data() + n * L * B, B, MPI_BYTE, local);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    };
    mpi(); twod();
    int ok = memcmp(out.data(), out2.data(), bytes) == 0, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    std::vector<double> ta, tb;
    for (int it = 0; it < iters + 3; ++it)
      for (int k = 0; k < 2; ++k) {
        bool first = (it + k) % 2 == 0;
        MPI_Barrier(b);
        double t0 = now();
        if (first) mpi(); else twod();
        double dt = now() - t0;
        if (it >= 3) (first ? ta : tb).push_back(dt);
      }
    MPI_Allreduce(MPI_IN_PLACE, ta.data(), ta.size(), MPI_DOUBLE, MPI_MAX, b);
    MPI_Allreduce(MPI_IN_PLACE, tb.data(), tb.size(), MPI_DOUBLE, MPI_MAX, b);
    std::sort(ta.begin(), ta.end()); std::sort(tb.begin(), tb.end());
    if (!rank) printf("%10ld  mpi %9.1f us  2d %9.1f us  ratio %.3f  %s\n", bytes, ta[ta.size()/2]*1e6, tb[tb.size()/2]*1e6, tb[tb.size()/2]/ta[ta.size()/2], all ? "ok" : "WRONG");
  }
  MPI_Finalize();
}
