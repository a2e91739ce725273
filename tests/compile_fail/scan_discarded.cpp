// scan of a const vector returns the prefixes: dropping them is a [[nodiscard]] warning (an error
// here) whose message names the in-place form.
#pragma GCC diagnostic error "-Wunused-result"
#include <vector>

#include "mpidist/objects.hpp"

void prefixes(const std::vector<double>& sizes) { mpidist::scan(sizes); }
