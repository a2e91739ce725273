// The Work of an operation made of several started ones and a last step: the non-blocking list
// forms, whose collectives go through host buffers that are copied into the caller's tensors once
// the collectives are done. Internal.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mpidist/work.hpp"

namespace mpidist::detail {

/// A Work that is done once every one of `parts` is done and `then` ran after them, on the thread
/// that waits for (or tests) it. A part's Error is the Work's (after every part ended), and `then`
/// does not run; an Error of `then` is the Work's.
Work joined_work(std::string communicator, std::string operation, std::vector<Work> parts, std::function<void()> then);

}  // namespace mpidist::detail
