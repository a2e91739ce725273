// Reduction operators shared by object (objects.hpp) and tensor (collectives.hpp) reductions.
#pragma once

#include <string_view>

namespace mpidist {

/// ignite's SUM/PRODUCT/MIN/MAX/AND/OR plus AVG. `And`/`Or` are logical (non-zero is true) and
/// apply to object reductions of integers and bool; tensor collectives take Sum..Avg.
/// `Avg` is the sum divided by the world size; for integers the division truncates toward zero.
enum class ReduceOp { Sum, Product, Min, Max, Avg, And, Or };

/// "sum", "prod", "min", "max", "avg", "and", "or" (nccl-tests' spelling).
std::string_view to_string(ReduceOp op) noexcept;
/// Inverse of to_string; throws Error for an unknown name.
ReduceOp reduce_op_from_string(std::string_view name);

}  // namespace mpidist
