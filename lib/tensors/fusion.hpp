// Tensor fusion: all_reduce_many's front end (lib/tensors/fusion.cpp). Internal.
#pragma once

#include <span>

#include "mpidist/collectives.hpp"

namespace mpidist::detail {

class Group;

/// all_reduce_many on `group`; `name` is the public function for error messages ("average").
void all_reduce_many(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op, Stream stream);

}  // namespace mpidist::detail
