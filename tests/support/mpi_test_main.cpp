// main() of the MPI test suites: mpidist is alive for the whole run.
#include "mpi_test.hpp"
#include "mpidist/environment.hpp"

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  return mpidist_test::run_all_tests(argc, argv);
}
