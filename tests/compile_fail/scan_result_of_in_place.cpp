// exscan of a non-const vector scans it in place and returns nothing: code that wanted the value
// form's result stops compiling instead of silently overwriting its argument.
#include <vector>

#include "mpidist/objects.hpp"

long long first(std::vector<long long>& counts) {
  const auto offsets = mpidist::exscan(counts);
  return offsets[0];
}
