// reduce with a ReduceOp on a string: the same refusal as all_reduce's, naming the function form.
#include <string>

#include "mpidist/objects.hpp"

void joined(const std::string& text) { (void)mpidist::reduce(text, mpidist::ReduceOp::Sum, 0); }
