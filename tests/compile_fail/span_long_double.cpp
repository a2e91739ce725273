// NCCL has no long double: the out-of-place call must fail with mpidist's message.
#include <vector>

#include "mpidist/collectives.hpp"

void reduce_long_doubles() {
  const std::vector<long double> in(4);
  std::vector<long double> out(4);
  mpidist::all_reduce(std::span(in), std::span(out));
}
