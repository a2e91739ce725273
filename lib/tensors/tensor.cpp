// BufferView and DataType: element types, sizes and where a buffer lives.
#include "mpidist/tensor.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device_backend.hpp"
#include "mpidist/error.hpp"

namespace mpidist {

namespace {

// Indexed by DataType.
constexpr std::array<std::string_view, 12> dtype_names{"float16", "bfloat16", "float32", "float64",
                                                        "int8",    "uint8",    "int32",   "int64",
                                                        "uint32",  "uint64",   "complex64", "complex128"};
constexpr std::array<std::size_t, 12> dtype_sizes{2, 2, 4, 8, 1, 1, 4, 8, 4, 8, 8, 16};

// float -> binary16 with round-to-nearest-even, handling subnormals, overflow to infinity and NaN.
std::uint16_t float_to_half_bits(float value) noexcept {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t exponent = (f >> 23) & 0xffu;
  std::uint32_t mantissa = f & 0x7fffffu;
  if (exponent == 0xffu)  // infinity stays infinity; NaN stays a (quiet) NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 13) : 0u));
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<std::uint16_t>(sign);  // below half the smallest subnormal
    mantissa |= 0x800000u;                                  // make the implicit bit explicit
    const int shift = 14 - e;
    const std::uint32_t half_mantissa = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    const bool round_up = rest > halfway || (rest == halfway && (half_mantissa & 1u));
    return static_cast<std::uint16_t>(sign | (half_mantissa + (round_up ? 1u : 0u)));
  }
  std::uint32_t bits = sign | (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  if (rest > 0x1000u || (rest == 0x1000u && (bits & 1u))) ++bits;
  return static_cast<std::uint16_t>(bits);
}

float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal: normalize into a float exponent.
  int e = -1;
  do {
    ++e;
    mantissa <<= 1;
  } while ((mantissa & 0x400u) == 0);
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mantissa & 0x3ffu) << 13));
}

}  // namespace

float16::float16(float value) noexcept : bits(float_to_half_bits(value)) {}
float16::operator float() const noexcept { return half_bits_to_float(bits); }

bfloat16::bfloat16(float value) noexcept {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffffu) != 0) {
    bits = static_cast<std::uint16_t>((f >> 16) | 0x40u);  // keep NaN a NaN after truncation
    return;
  }
  const std::uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);  // round to nearest even
  bits = static_cast<std::uint16_t>((f + rounding) >> 16);
}
bfloat16::operator float() const noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::size_t size_of(DataType dtype) noexcept { return dtype_sizes[static_cast<std::size_t>(dtype)]; }

std::string_view to_string(DataType dtype) noexcept { return dtype_names[static_cast<std::size_t>(dtype)]; }

DataType dtype_from_string(std::string_view name) {
  for (std::size_t i = 0; i < dtype_names.size(); ++i)
    if (dtype_names[i] == name) return static_cast<DataType>(i);
  if (name == "half") return DataType::Float16;
  if (name == "bf16") return DataType::BFloat16;
  if (name == "float") return DataType::Float32;
  if (name == "double") return DataType::Float64;
  if (name == "int") return DataType::Int32;
  if (name == "cfloat") return DataType::Complex64;
  if (name == "cdouble") return DataType::Complex128;
  throw Error("dtype_from_string", "unknown element type '" + std::string(name) +
                                       "' (expected float16, bfloat16, float32, float64, int8, uint8, int32, "
                                       "int64, uint32, uint64, complex64 or complex128)");
}

BufferView::BufferView(void* data, std::size_t count, DataType dtype) : data_(data), count_(count), dtype_(dtype) {
  if (static_cast<std::size_t>(dtype) >= dtype_names.size())
    throw Error("BufferView", "invalid DataType value " + std::to_string(static_cast<int>(dtype)));
  // No buffer can be larger than PTRDIFF_MAX bytes; a count past that would make bytes() wrap.
  // Tested with a multiplication: a 64-bit division costs tens of cycles on every view.
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size_of(dtype), &bytes) || bytes > static_cast<std::size_t>(PTRDIFF_MAX)) {
    const std::size_t max_count = static_cast<std::size_t>(PTRDIFF_MAX) / size_of(dtype);
    throw Error("BufferView", std::to_string(count) + " elements of " + std::string(to_string(dtype)) +
                                  " overflow the byte size (at most " + std::to_string(max_count) +
                                  " elements of this type fit in one buffer)");
  }
  if (data == nullptr && count > 0)
    throw Error("BufferView", "null data pointer with " + std::to_string(count) + " elements");
  const auto where = detail::locate_memory(data);
  memory_ = where.kind;
  device_ = where.device;
}

}  // namespace mpidist
