// A span of bool is no tensor: the call must fail with mpidist's message.
#include <array>

#include "mpidist/collectives.hpp"

void reduce_flags() {
  std::array<bool, 4> flags{};
  mpidist::all_reduce(std::span(flags), mpidist::ReduceOp::Max);
}
