// MPI datatypes and reduction operators for the tensor element types.
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/complex_elements.hpp"
#include "core/context.hpp"
#include "core/mpi_check.hpp"
#include "mpi/comparison_ops.hpp"
#include "mpi/host_collectives.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail::mpi {
namespace {

struct Add { float operator()(float a, float b) const { return a + b; } };
struct Multiply { float operator()(float a, float b) const { return a * b; } };
struct Smaller { float operator()(float a, float b) const { return b < a ? b : a; } };
struct Larger { float operator()(float a, float b) const { return b > a ? b : a; } };

// An MPI user function for a half type H: each pair is combined in float and rounded back once,
// the way NCCL combines halves.
template <class H, class F>
void half_reduction(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const H*>(in);
  auto* b = static_cast<H*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = H(F{}(static_cast<float>(a[i]), static_cast<float>(b[i])));
}

template <class H>
constexpr std::array<MPI_User_function*, 4> half_functions{
    &half_reduction<H, Add>, &half_reduction<H, Multiply>, &half_reduction<H, Smaller>, &half_reduction<H, Larger>};

// The eight user-defined ops (2 half types x sum/prod/min/max), created on first use and freed at
// finalize, before MPI goes away. A fresh set is made if mpidist is initialized again.
struct HalfOps {
  std::array<MPI_Op, 8> ops;
  bool created = false;
};
HalfOps g_half_ops;

void free_half_ops() {
  for (auto& op : g_half_ops.ops)
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
  g_half_ops.created = false;
}

MPI_Op half_op(ReduceOp op, DataType dtype) {
  if (!g_half_ops.created) {
    for (std::size_t i = 0; i < 4; ++i) {
      // Commutative: MPI may combine in any order, as it does for MPI_SUM on floats.
      MPIDIST_MPI_CHECK(MPI_Op_create(half_functions<float16>[i], 1, &g_half_ops.ops[i]));
      MPIDIST_MPI_CHECK(MPI_Op_create(half_functions<bfloat16>[i], 1, &g_half_ops.ops[4 + i]));
    }
    g_half_ops.created = true;
    at_finalize(free_half_ops);
  }
  const std::size_t index = op == ReduceOp::Avg ? 0 : static_cast<std::size_t>(op);
  return g_half_ops.ops[(dtype == DataType::BFloat16 ? 4 : 0) + index];
}

template <class T>
void divide_as(void* data, std::size_t count, int divisor) {
  auto* values = static_cast<T*>(data);
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    for (std::size_t i = 0; i < count; ++i) values[i] = T(static_cast<float>(values[i]) / static_cast<float>(divisor));
  } else {
    // C++ integer division truncates toward zero, which is the documented integer Avg.
    for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / static_cast<std::common_type_t<T, int>>(divisor));
  }
}

}  // namespace

MPI_Datatype datatype(DataType dtype) {
  switch (dtype) {
    case DataType::Float16:
    case DataType::BFloat16: return MPI_UINT16_T;
    case DataType::Float32: return MPI_FLOAT;
    case DataType::Float64: return MPI_DOUBLE;
    case DataType::Int8: return MPI_INT8_T;
    case DataType::UInt8: return MPI_UINT8_T;
    case DataType::Int32: return MPI_INT32_T;
    case DataType::Int64: return MPI_INT64_T;
    case DataType::UInt32: return MPI_UINT32_T;
    case DataType::UInt64: return MPI_UINT64_T;
    case DataType::Complex64: return MPI_C_FLOAT_COMPLEX;  // MPI_SUM is defined on them
    case DataType::Complex128: return MPI_C_DOUBLE_COMPLEX;
  }
  throw Error("tensor collective", "unknown DataType " + std::to_string(static_cast<int>(dtype)));
}

MPI_Op reduction(ReduceOp op, DataType dtype) {
  if (dtype == DataType::Float16 || dtype == DataType::BFloat16) return half_op(op, dtype);
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return MPI_SUM;
    case ReduceOp::Product: return MPI_PROD;
    case ReduceOp::Min: return comparison_op(MPI_MIN, datatype(dtype));
    case ReduceOp::Max: return comparison_op(MPI_MAX, datatype(dtype));
    case ReduceOp::BitAnd: return MPI_BAND;  // integers only (call_checks.cpp)
    case ReduceOp::BitOr: return MPI_BOR;
    case ReduceOp::BitXor: return MPI_BXOR;
    case ReduceOp::And:
    case ReduceOp::Or: break;
  }
  throw Error("tensor collective", "reduction '" + std::string(to_string(op)) + "' is not defined for tensors");
}

void divide(void* data, std::size_t count, DataType dtype, int divisor) {
  switch (dtype) {
    case DataType::Float16: return divide_as<float16>(data, count, divisor);
    case DataType::BFloat16: return divide_as<bfloat16>(data, count, divisor);
    case DataType::Float32: return divide_as<float>(data, count, divisor);
    case DataType::Float64: return divide_as<double>(data, count, divisor);
    case DataType::Int8: return divide_as<std::int8_t>(data, count, divisor);
    case DataType::UInt8: return divide_as<std::uint8_t>(data, count, divisor);
    case DataType::Int32: return divide_as<std::int32_t>(data, count, divisor);
    case DataType::Int64: return divide_as<std::int64_t>(data, count, divisor);
    case DataType::UInt32: return divide_as<std::uint32_t>(data, count, divisor);
    case DataType::UInt64: return divide_as<std::uint64_t>(data, count, divisor);
    case DataType::Complex64:
    case DataType::Complex128: {  // a complex number over a real divisor: each part
      const RealParts parts = real_parts(dtype, count);
      return divide(data, parts.count, parts.dtype, divisor);
    }
  }
}

}  // namespace mpidist::detail::mpi
