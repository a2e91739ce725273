// The "[rank r/n] " prefix shared by errors, log lines and rank_prefixed_message. Internal.
#pragma once

#include <string>

namespace mpidist::detail {
/// "[rank r/n] " once initialized, "" before.
std::string rank_prefix();
}  // namespace mpidist::detail
