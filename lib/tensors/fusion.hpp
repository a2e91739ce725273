// Tensor fusion: all_reduce_many's front end (lib/tensors/fusion.cpp). Internal.
#pragma once

#include <chrono>
#include <span>

#include "mpidist/collectives.hpp"
#include "mpidist/work.hpp"

namespace mpidist::detail {

class Group;

/// Where a non-blocking all_reduce_many writes when its data step began and ended (GradientBuckets'
/// timeline): written by whichever thread runs the step, before its Work is done. Null: not told.
struct StepClock {
  std::chrono::steady_clock::time_point* started = nullptr;
  std::chrono::steady_clock::time_point* finished = nullptr;
};

/// all_reduce_many on `group`; `name` is the public function for error messages ("average").
void all_reduce_many(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op, Stream stream);
/// The same, non-blocking (async_collectives.hpp): checked and agreed now, the data step queued on
/// the group's lane where it needs no MPI (the node's segment), else run now. `clock`, when given,
/// hears when the data step ran.
Work all_reduce_many_async(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op,
                           Stream stream, StepClock clock = {});

}  // namespace mpidist::detail
