// Tensor fusion: all_reduce_many's front end (lib/tensors/fusion.cpp). Internal.
#pragma once

#include <span>

#include "mpidist/collectives.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail {

class Group;

/// all_reduce_many on `group`; `name` is the public function for error messages ("average").
void all_reduce_many(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op, Stream stream);
/// The same, non-blocking (async_collectives.hpp): checked and agreed now, the data step queued on
/// the group's lane where it needs no MPI (the node's segment), else run now.
Work all_reduce_many_async(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op,
                           Stream stream);

}  // namespace mpidist::detail
