// The raw MPI calls mpidist-bench compares against.
#include "raw_mpi.hpp"

#include <array>
#include <climits>
#include <stdexcept>
#include <string>

#include "data.hpp"

namespace bench {
namespace {

using mpidist::DataType;
using mpidist::ReduceOp;

// One user op per (half type, Sum/Product/Min/Max): an MPI_User_function cannot carry state, so
// the combination is a template parameter.
template <class T, ReduceOp Op>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    float r = x + y;
    if constexpr (Op == ReduceOp::Product) r = x * y;
    if constexpr (Op == ReduceOp::Min) r = x < y ? x : y;
    if constexpr (Op == ReduceOp::Max) r = x > y ? x : y;
    b[i] = T(r);
  }
}

template <class T>
MPI_User_function* half_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::Product: return &half_op<T, ReduceOp::Product>;
    case ReduceOp::Min: return &half_op<T, ReduceOp::Min>;
    case ReduceOp::Max: return &half_op<T, ReduceOp::Max>;
    default: return &half_op<T, ReduceOp::Sum>;  // Sum, and Avg's sum step
  }
}

// [is bfloat16][op index]; MPI_OP_NULL until first use.
std::array<std::array<MPI_Op, 7>, 2> half_ops = [] {
  std::array<std::array<MPI_Op, 7>, 2> ops{};
  for (auto& row : ops) row.fill(MPI_OP_NULL);
  return ops;
}();

}  // namespace

MPI_Datatype mpi_type(DataType dtype) {
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
    case DataType::Complex64: return MPI_C_FLOAT_COMPLEX;
    case DataType::Complex128: return MPI_C_DOUBLE_COMPLEX;
  }
  throw std::invalid_argument("mpi_type: unknown dtype");
}

MPI_Op mpi_op(ReduceOp op, DataType dtype) {
  if (dtype == DataType::Float16 || dtype == DataType::BFloat16) {
    MPI_Op& slot = half_ops[dtype == DataType::BFloat16 ? 1 : 0][static_cast<std::size_t>(op)];
    if (slot == MPI_OP_NULL) {
      MPI_User_function* fn = dtype == DataType::BFloat16 ? half_function<mpidist::bfloat16>(op)
                                                          : half_function<mpidist::float16>(op);
      MPI_Op_create(fn, /*commute=*/1, &slot);
    }
    return slot;
  }
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return MPI_SUM;
    case ReduceOp::Product: return MPI_PROD;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::And: return MPI_LAND;
    case ReduceOp::Or: return MPI_LOR;
    case ReduceOp::BitAnd: return MPI_BAND;
    case ReduceOp::BitOr: return MPI_BOR;
    case ReduceOp::BitXor: return MPI_BXOR;
  }
  throw std::invalid_argument("mpi_op: unknown reduction");
}

void divide_in_place(void* data, std::size_t count, DataType dtype, int divisor) {
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* p = static_cast<T*>(data);
    if constexpr (is_half_v<T>) {
      for (std::size_t i = 0; i < count; ++i) p[i] = T(static_cast<float>(p[i]) / static_cast<float>(divisor));
    } else {
      for (std::size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(divisor));
    }
  });
}

void free_raw_mpi_ops() {
  for (auto& row : half_ops)
    for (MPI_Op& op : row)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
}

int mpi_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument("raw MPI: count " + std::to_string(count) + " exceeds INT_MAX");
  return static_cast<int>(count);
}

}  // namespace bench
