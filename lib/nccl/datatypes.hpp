// mpidist's element types as NCCL's. Internal.
#pragma once

#include <nccl.h>

#include <string>

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
  }
  throw Error("nccl", "element type " + std::to_string(static_cast<int>(dtype)) + " has no NCCL datatype");
}

}  // namespace mpidist::detail::nccl
