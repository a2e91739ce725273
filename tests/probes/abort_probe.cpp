// A job in which rank 1 fails while the others wait in a barrier. mpidist must abort the job with a
// message naming rank 1 instead of leaving the others hanging.
//   abort_probe uncaught  - the exception escapes main()
//   abort_probe scope     - the exception leaves the Environment's scope and is caught outside it
#include <cstring>
#include <stdexcept>

#include "mpidist/mpidist.hpp"

namespace {
void run(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  if (mpidist::rank() == 1) throw std::runtime_error("probe failure on purpose");
  mpidist::barrier();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "scope") == 0) {
    try {
      run(argc, argv);
    } catch (const std::exception&) {
    }
  } else {
    run(argc, argv);  // nothing catches: std::terminate
  }
  return 0;
}
