#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>
#include "mpidist/mpidist.hpp"
static std::vector<char> junk(64u << 20);
void flush() { for (size_t i = 0; i < junk.size(); i += 64) junk[i]++; }
int main(int argc, char** argv) {
  const bool warm = std::strstr(argv[0], "warm") != nullptr;
  mpidist::initialize(argc, argv);
  int n = mpidist::world_size();
  const bool ar = std::strcmp(argv[1], "ar") == 0;
  const size_t count = size_t(atoi(argv[2])) / 4, block = count / n;
  const int iters = atoi(argv[3]);
  std::vector<float> in(count), out(count);
  for (int i = 0; i < iters; ++i) {
    if (!warm) flush();
    MPI_Barrier(MPI_COMM_WORLD);
    if (ar) mpidist::all_reduce(std::span<float>(out.data(), count));
    else mpidist::all_to_all(std::span<const float>(in.data(), block * n), std::span<float>(out.data(), block * n));
  }
  mpidist::finalize();
}
