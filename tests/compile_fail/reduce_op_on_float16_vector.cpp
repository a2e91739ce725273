// float16 is a tensor element, not an arithmetic type the object reductions take: the refusal
// names the tensor form instead of a function.
#include <vector>

#include "mpidist/mpidist.hpp"

void average(std::vector<mpidist::float16>& grad) { mpidist::all_reduce(grad, mpidist::ReduceOp::Avg); }
