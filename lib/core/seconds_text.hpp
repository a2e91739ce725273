// A duration as the errors and reports name it: "5 s", "1.5 s", "0.001 s", "-5 s" (printf's %g,
// so a limit reads as the user set it rather than as "5.000000").
#pragma once

#include <cstdio>
#include <string>

namespace mpidist::detail {

inline std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

}  // namespace mpidist::detail
