#include "launcher.hpp"

#include <mpi.h>

#include <thread>

namespace mpidist::detail::mpi {

std::vector<std::string> launcher_arguments(int nproc) {
#ifdef OPEN_MPI
  if (static_cast<unsigned>(nproc) > std::thread::hardware_concurrency()) return {"--oversubscribe"};
#else
  (void)nproc;
#endif
  return {};
}

}  // namespace mpidist::detail::mpi
