// Built by CMake against an installed mpidist (find_package(mpidist CONFIG)); run under
// mpiexec -n 2 by tests/cmake_consumer/check.sh. An object collective needs Boost.Serialization,
// a raw MPI call the MPI usage requirements: both must come with mpidist::mpidist.
#include <mpi.h>

#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <iostream>
#include <map>
#include <string>

#include <mpidist/mpidist.hpp>

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  std::map<std::string, int> mine{{"rank" + std::to_string(mpidist::rank()), mpidist::rank() + 1}};
  const auto everyone = mpidist::all_gather(mine);
  int sum = 0;
  for (const auto& part : everyone)
    for (const auto& [key, value] : part) sum += value;
  int size = 0;
  MPI_Comm_size(mpidist::communicator(), &size);
  std::cout << mpidist::rank_prefixed_message("cmake consumer ok, size " + std::to_string(size) + ", sum " +
                                              std::to_string(sum))
            << std::endl;
  return 0;
}
