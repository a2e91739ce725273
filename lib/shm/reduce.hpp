// The arithmetic of the shared-memory collectives: element-wise reductions of several sources
// into one destination, in a fixed order. Compiled at -O3 (lib/meson.build) so the plain loops
// vectorize. Internal.
#pragma once

#include <cstddef>

#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"

namespace mpidist::detail::shm {

/// dest[i] = s[0][i] op s[1][i] op ... op s[n-1][i] for i < count, combined left to right (rank
/// order) so every rank computing the same slice gets the same bits. float16 and bfloat16 are
/// accumulated in float over all sources and rounded once. Integer sums and products wrap.
/// `op` is Sum, Product, Min or Max, or on integers BitAnd, BitOr or BitXor (Avg reduces as Sum;
/// the caller divides). `dest` may be one of
/// the sources, but must not overlap any of them partially.
void reduce(void* dest, const void* const* sources, int n, std::size_t count, DataType dtype, ReduceOp op);

}  // namespace mpidist::detail::shm
