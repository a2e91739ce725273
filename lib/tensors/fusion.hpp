// Tensor fusion: all_reduce_many's front end (lib/tensors/fusion.cpp). Internal.
#pragma once

#include <chrono>
#include <functional>
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

/// Returns once buffers [0, index] of an all_reduce_many's list hold their data: the data step
/// asks before it reads them, so that it can start on a list that is still being filled.
using ListGate = std::function<void(std::size_t index)>;

/// all_reduce_many on `group`; `name` is the public function for error messages ("average").
void all_reduce_many(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op, Stream stream);
/// The same, non-blocking (async_collectives.hpp): checked and agreed now, the data step queued on
/// the group's lane where it needs no MPI (the node's segment), else run now. `clock`, when given,
/// hears when the data step ran. `gate`, when given, is asked before the step reads each buffer:
/// it may hold a step on the lane, never one run now (all_reduce_many_on_lane says which).
Work all_reduce_many_async(Group& group, const char* name, std::span<const BufferView> buffers, ReduceOp op,
                           Stream stream, StepClock clock = {}, ListGate gate = {});
/// Whether all_reduce_many_async of `buffers` on `group`, called now, runs its data step on the
/// group's lane (a group on one node, through the segment; or ThreadLevel::Multiple), not at issue.
bool all_reduce_many_on_lane(Group& group, std::span<const BufferView> buffers);

}  // namespace mpidist::detail
