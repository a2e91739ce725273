// ReduceOp: names and parsing.
#include "mpidist/reduce_op.hpp"

#include <array>
#include <string>

#include "mpidist/error.hpp"

namespace mpidist {

namespace {
constexpr std::array<std::string_view, 10> op_names{"sum", "prod", "min", "max", "avg", "and", "or", "band", "bor", "bxor"};
}

std::string_view to_string(ReduceOp op) noexcept { return op_names[static_cast<std::size_t>(op)]; }

ReduceOp reduce_op_from_string(std::string_view name) {
  for (std::size_t i = 0; i < op_names.size(); ++i)
    if (op_names[i] == name) return static_cast<ReduceOp>(i);
  if (name == "product") return ReduceOp::Product;
  if (name == "mean" || name == "average") return ReduceOp::Avg;
  if (name == "bit_and") return ReduceOp::BitAnd;
  if (name == "bit_or") return ReduceOp::BitOr;
  if (name == "bit_xor") return ReduceOp::BitXor;
  throw Error("reduce_op_from_string", "unknown reduction '" + std::string(name) +
                                           "' (expected sum, prod, min, max, avg, and, or, band, bor or bxor)");
}

}  // namespace mpidist
