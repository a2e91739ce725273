// NCCL has no 16-bit integers.
#include <vector>

#include "mpidist/collectives.hpp"

void broadcast_shorts() {
  std::vector<short> values(4);
  mpidist::broadcast(std::span(values));
}
