// mpidist's element types as NCCL's. Internal.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <string>

#include "core/complex_elements.hpp"
#include "mpidist/error.hpp"
#include "mpidist/tensor.hpp"

namespace mpidist::detail::nccl {

inline ncclDataType_t datatype(DataType dtype) {
  switch (dtype) {
    case DataType::Float16: return ncclFloat16;
    case DataType::BFloat16: return ncclBfloat16;
    case DataType::Float32: return ncclFloat32;
    case DataType::Float64: return ncclFloat64;
    case DataType::Int8: return ncclInt8;
    case DataType::UInt8: return ncclUint8;
    case DataType::Int32: return ncclInt32;
    case DataType::Int64: return ncclInt64;
    case DataType::UInt32: return ncclUint32;
    case DataType::UInt64: return ncclUint64;
    case DataType::Complex64:
    case DataType::Complex128: break;  // no NCCL type: as_nccl below sends the parts
  }
  throw Error("nccl", "element type " + std::string(to_string(dtype)) + " has no NCCL datatype");
}

/// `count` elements of `dtype` as NCCL counts them: complex numbers as twice as many real parts.
struct NcclElements {
  ncclDataType_t type;
  std::size_t count;
};

inline NcclElements as_nccl(DataType dtype, std::size_t count) {
  const RealParts parts = real_parts(dtype, count);
  return {datatype(parts.dtype), parts.count};
}

}  // namespace mpidist::detail::nccl
