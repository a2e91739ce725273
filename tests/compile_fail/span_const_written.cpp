// A span of const elements where a call writes: a compile error saying why, not a write into
// memory the caller holds as const (the `in` of a call, and a BufferView spelled out, compile:
// tensors_as_held).
#include <span>

#include "mpidist/collectives.hpp"

void average_gradients(std::span<const float> gradients) { mpidist::all_reduce(gradients, mpidist::ReduceOp::Avg); }
