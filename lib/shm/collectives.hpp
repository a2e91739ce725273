// Host collectives through the node's shared-memory segment (shm/segment.hpp), and the hierarchical
// all-reduce built on it for groups spanning several nodes. Internal.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

#include "core/collective_call.hpp"

namespace mpidist::detail::shm {

/// One buffer of a (possibly fused) all-reduce: `bytes` read from `in`, the result written to
/// `out` (in == out in place).
struct Piece {
  const void* in;
  void* out;
  std::size_t bytes;
};

/// True when `call` is a host collective that the shared-memory path should take on a group whose
/// ranks all share one node (`one_node`: all_reduce, broadcast, reduce, reduce_scatter,
/// all_gather), or an all_reduce, all_gather or reduce_scatter on a group that spans several nodes
/// (!one_node): forced by MPIDIST_HOST_ALLREDUCE=shm or 2d, or where it measured faster than MPI
/// under auto.
bool accepts(const Call& call, bool one_node);

/// Runs `call` (a host collective on a group on one node) through the segment.
void run_one_node(const Call& call);
/// Runs `call` (a host all_reduce, all_gather or reduce_scatter on a group spanning nodes): the
/// 2D paths (shm/two_level.hpp) where they were chosen, else the leader-only all-reduce: reduce to
/// each node's leader in shared memory, MPI all-reduce across the leaders, broadcast from the
/// leader in shared memory.
void run_hierarchical(const Call& call);

/// Returns once the first `end` bytes of a message's input hold their data: an all-reduce given one
/// calls it before it reads each chunk, so that it can start on a message that is still being
/// filled (GradientBuckets streams a bucket as backward produces its gradients).
using InputGate = std::function<void(std::size_t end)>;

/// The all-reduce of run_one_node over the concatenation of `pieces` (all of `dtype`): fusion
/// packs its buffers straight into the segment this way. Collective over the group, on one node.
/// `gate`, when given, is asked before each chunk's input is read.
void all_reduce_pieces(Group& group, const char* operation, std::span<const Piece> pieces, DataType dtype,
                       ReduceOp op, const InputGate* gate = nullptr);

}  // namespace mpidist::detail::shm
