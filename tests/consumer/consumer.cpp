// Built against mpidist as a Meson subproject; run under mpiexec -n 2 by tests/consumer/check.sh.
#include <iostream>

#include <mpidist/mpidist.hpp>

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  int ready = 0;
  mpidist::run_on_main([&] { ready = 1; });
  mpidist::barrier();
  std::cout << mpidist::rank_prefixed_message("consumer ok, " + std::to_string(mpidist::num_nodes()) + " node(s)")
            << std::endl;
  return 0;
}
