// The in-place form returns nothing: code that used the value form's result on a non-const
// vector stops compiling instead of silently reducing its argument too.
#include <vector>

#include "mpidist/objects.hpp"

double first(std::vector<double>& grad) {
  const auto total = mpidist::all_reduce(grad, mpidist::ReduceOp::Sum);
  return total[0];
}
