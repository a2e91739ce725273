// float16 is a tensor element, not an arithmetic type the object reductions take: a non-const
// vector of them is reduced in place as a tensor, and the value form of a const one is refused
// with a message that names the tensor form instead of a function.
#include <utility>
#include <vector>

#include "mpidist/mpidist.hpp"

void average(std::vector<mpidist::float16>& grad) {
  mpidist::all_reduce(grad, mpidist::ReduceOp::Avg);  // in place: compiles
  const auto averaged = mpidist::all_reduce(std::as_const(grad), mpidist::ReduceOp::Avg);
  (void)averaged;
}
