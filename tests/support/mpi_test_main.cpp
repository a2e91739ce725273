// main() of the MPI test suites: mpidist is alive for the whole run. MPIDIST_TEST_THREAD_LEVEL=
// multiple initializes at ThreadLevel::Multiple (the non-blocking calls' MPI steps off the caller).
#include <cstdlib>
#include <string>

#include "mpi_test.hpp"
#include "mpidist/environment.hpp"

int main(int argc, char** argv) {
  const char* level = std::getenv("MPIDIST_TEST_THREAD_LEVEL");
  const bool multiple = level != nullptr && std::string(level) == "multiple";
  mpidist::Environment env(argc, argv, multiple ? mpidist::ThreadLevel::Multiple : mpidist::ThreadLevel::Funneled);
  return mpidist_test::run_all_tests(argc, argv);
}
