// Complex elements as their real parts. std::complex<T> is laid out as two T (real, imaginary),
// so a sum or an average of complex numbers is the same sum or average over twice as many reals:
// the reduction kernels, MPI's averaging and NCCL (which has no complex type) see real parts.
// The front end refuses the other reductions on complex elements (tensors/call_checks.cpp).
#pragma once

#include <cstddef>

#include "mpidist/tensor.hpp"

namespace mpidist::detail {

inline bool is_complex(DataType dtype) noexcept {
  return dtype == DataType::Complex64 || dtype == DataType::Complex128;
}

/// `count` elements of `dtype` as elements of a real type: themselves, or twice as many parts.
struct RealParts {
  DataType dtype;
  std::size_t count;
};

inline RealParts real_parts(DataType dtype, std::size_t count) noexcept {
  if (dtype == DataType::Complex64) return {DataType::Float32, 2 * count};
  if (dtype == DataType::Complex128) return {DataType::Float64, 2 * count};
  return {dtype, count};
}

}  // namespace mpidist::detail
