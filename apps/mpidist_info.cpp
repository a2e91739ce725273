// mpidist-info: one aligned table (or JSON with --json) describing every rank of the job.
//   mpiexec -n 4 mpidist-info [--json]
#include <cstring>
#include <iostream>

#include "mpidist/mpidist.hpp"

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  auto format = mpidist::ConfigFormat::Table;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      format = mpidist::ConfigFormat::Json;
    } else {
      if (mpidist::is_main_process())
        std::cerr << "usage: mpiexec -n N mpidist-info [--json]\n  unknown argument '" << argv[i] << "'\n";
      return 2;
    }
  }
  mpidist::show_config(std::cout, format);
  return 0;
}
