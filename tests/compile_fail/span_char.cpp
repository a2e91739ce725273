// Plain char (signedness varies by platform) is no tensor element type.
#include <vector>

#include "mpidist/collectives.hpp"

void reduce_text() {
  std::vector<char> text(8);
  mpidist::all_reduce(std::span(text));
}
