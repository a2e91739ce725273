// launch_probe NPROC FILE [fail|init-first]: launch() NPROC ranks, each appending "rank size" to
// FILE; with "fail", rank 1 throws so the exit code must say so; with "init-first", mpidist (and so
// MPI, as a singleton) is initialized before launch() is called.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "mpidist/mpidist.hpp"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int nproc = std::atoi(argv[1]);
  const std::string path = argv[2];
  const bool fail = argc > 3 && std::strcmp(argv[3], "fail") == 0;
  const bool init_first = argc > 3 && std::strcmp(argv[3], "init-first") == 0;
  if (init_first) mpidist::initialize();
  const int status = mpidist::launch(nproc, [&] {
    std::ofstream(path, std::ios::app) << mpidist::rank() << ' ' << mpidist::world_size() << '\n';
    if (fail && mpidist::rank() == 1) throw std::runtime_error("launched rank fails on purpose");
    mpidist::barrier();
  });
  if (init_first) mpidist::finalize();
  return status;
}
