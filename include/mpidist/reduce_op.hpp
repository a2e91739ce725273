// Reduction operators shared by object (objects.hpp) and tensor (collectives.hpp) reductions.
#pragma once

#include <string_view>

namespace mpidist {

/// ignite's SUM/PRODUCT/MIN/MAX/AND/OR plus AVG, and torch's (and MPI's) bitwise BAND/BOR/BXOR.
/// `And`/`Or` are logical (non-zero is true) and apply to object reductions of integers and bool;
/// tensor collectives take the others. `Avg` is the sum divided by the world size; for integers the
/// division truncates toward zero. `BitAnd`/`BitOr`/`BitXor` combine the bits of integers (tensors
/// of int8 to uint64; objects: integers and bool), as std::bit_and, std::bit_or, std::bit_xor.
enum class ReduceOp { Sum, Product, Min, Max, Avg, And, Or, BitAnd, BitOr, BitXor };

/// "sum", "prod", "min", "max", "avg", "and", "or", "band", "bor", "bxor" (nccl-tests' and
/// torch's spelling).
std::string_view to_string(ReduceOp op) noexcept;
/// Inverse of to_string; throws Error for an unknown name.
ReduceOp reduce_op_from_string(std::string_view name);

namespace detail {
constexpr bool bitwise(ReduceOp op) noexcept {
  return op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor;
}
}  // namespace detail

}  // namespace mpidist
