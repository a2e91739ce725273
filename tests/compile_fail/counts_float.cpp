// Counts are integers: a float list stops the build saying so, not as "no matching function".
#include <vector>

#include "mpidist/mpidist.hpp"

void float_counts() {
  std::vector<float> in(2), out(4);
  const std::vector<float> counts{2.0f, 2.0f};
  mpidist::all_gather_v(std::span(in), std::span(out), counts);
}
