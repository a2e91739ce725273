// JSON string quoting for the library's reports. Internal.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace mpidist::detail {
/// `text` as a quoted JSON string, control characters escaped.
inline std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}
}  // namespace mpidist::detail
