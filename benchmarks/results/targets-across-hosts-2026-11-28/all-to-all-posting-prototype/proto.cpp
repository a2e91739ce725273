// MPI_Alltoall against hand-posted exchanges, interleaved, a barrier before each, median of the slowest rank.
#include <mpi.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm a, b, sh; MPI_Comm_dup(MPI_COMM_WORLD, &a); MPI_Comm_dup(MPI_COMM_WORLD, &b);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &sh);
  // node of every rank: the lowest world rank sharing memory with it
  int lead = r; MPI_Allreduce(MPI_IN_PLACE, &lead, 1, MPI_INT, MPI_MIN, sh);
  std::vector<int> node(n); MPI_Allgather(&lead, 1, MPI_INT, node.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const int iters = argc > 1 ? atoi(argv[1]) : 30;
  if (r == 0) std::printf("%10s %10s %10s %10s %8s %8s\n", "bytes/rank", "mpi(us)", "linear", "netfirst", "lin/mpi", "nf/mpi");
  for (size_t bytes = 64 << 10; bytes <= (16u << 20); bytes *= 4) {
    const size_t block = bytes / n;
    std::vector<char> in(bytes), o1(bytes), o2(bytes), o3(bytes);
    for (size_t i = 0; i < bytes; ++i) in[i] = char(r * 31 + i);
    std::vector<MPI_Request> req(2 * n);
    auto mpi = [&] { MPI_Alltoall(in.data(), (int)block, MPI_BYTE, o1.data(), (int)block, MPI_BYTE, a); };
    auto linear = [&] {
      int k = 0;
      for (int s = 1; s < n; ++s) { int p = (r - s + n) % n; MPI_Irecv(o2.data() + p * block, (int)block, MPI_BYTE, p, 0, b, &req[k++]); }
      for (int s = 1; s < n; ++s) { int p = (r + s) % n; MPI_Isend(in.data() + p * block, (int)block, MPI_BYTE, p, 0, b, &req[k++]); }
      std::memcpy(o2.data() + r * block, in.data() + r * block, block);
      MPI_Waitall(k, req.data(), MPI_STATUSES_IGNORE);
    };
    auto netfirst = [&] {  // the other node's peers first, then the node's own
      int k = 0;
      for (int pass = 0; pass < 2; ++pass)
        for (int s = 1; s < n; ++s) {
          int p = (r - s + n) % n, q = (r + s) % n;
          if ((node[p] != node[r]) == (pass == 0)) MPI_Irecv(o3.data() + p * block, (int)block, MPI_BYTE, p, 1, b, &req[k++]);
          if ((node[q] != node[r]) == (pass == 0)) MPI_Isend(in.data() + q * block, (int)block, MPI_BYTE, q, 1, b, &req[k++]);
        }
      std::memcpy(o3.data() + r * block, in.data() + r * block, block);
      MPI_Waitall(k, req.data(), MPI_STATUSES_IGNORE);
    };
    const int it = bytes >= (4u << 20) ? 10 : iters;
    std::vector<double> t[3];
    for (int i = 0; i < it + 3; ++i)
      for (int c = 0; c < 3; ++c) {
        int w = (c + i) % 3;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (w == 0) mpi(); else if (w == 1) linear(); else netfirst();
        double dt = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 3) t[w].push_back(dt);
      }
    if (o1 != o2 || o1 != o3) { std::fprintf(stderr, "rank %d: results differ at %zu\n", r, bytes); MPI_Abort(MPI_COMM_WORLD, 1); }
    double m[3];
    for (int c = 0; c < 3; ++c) { std::sort(t[c].begin(), t[c].end()); m[c] = t[c][t[c].size() / 2] * 1e6; }
    if (r == 0) std::printf("%10zu %10.1f %10.1f %10.1f %8.2f %8.2f\n", bytes, m[0], m[1], m[2], m[1] / m[0], m[2] / m[0]);
  }
  MPI_Finalize();
}
