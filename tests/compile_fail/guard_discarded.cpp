// A zero_first() guard dropped at once orders an empty block: the [[nodiscard]] says so (made an
// error here, as -Werror would).
#pragma GCC diagnostic error "-Wunused-result"
#include "mpidist/mpidist.hpp"

void prepare() {
  mpidist::zero_first();
}
