// Element types and non-owning buffer views for the tensor collectives (collectives.hpp).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace mpidist {

/// The element types of tensor collectives (nccl-tests' names in to_string).
enum class DataType { Float16, BFloat16, Float32, Float64, Int8, UInt8, Int32, Int64 };

/// IEEE 754 binary16 on the host: storage plus conversions; arithmetic goes through float.
struct float16 {
  std::uint16_t bits = 0;
  float16() = default;
  explicit float16(float value) noexcept;
  explicit operator float() const noexcept;
  static constexpr float16 from_bits(std::uint16_t b) noexcept { float16 h; h.bits = b; return h; }
  friend bool operator==(float16 a, float16 b) noexcept { return a.bits == b.bits; }
};

/// bfloat16 (the upper half of a float32) on the host; conversions round to nearest even.
struct bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float value) noexcept;
  explicit operator float() const noexcept;
  static constexpr bfloat16 from_bits(std::uint16_t b) noexcept { bfloat16 h; h.bits = b; return h; }
  friend bool operator==(bfloat16 a, bfloat16 b) noexcept { return a.bits == b.bits; }
};

static_assert(sizeof(float16) == 2 && std::is_trivially_copyable_v<float16>);
static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>);

/// dtype_of<T>::value: the DataType of a C++ element type (undefined for unsupported types).
template <class T> struct dtype_of;
template <> struct dtype_of<float16> { static constexpr DataType value = DataType::Float16; };
template <> struct dtype_of<bfloat16> { static constexpr DataType value = DataType::BFloat16; };
template <> struct dtype_of<float> { static constexpr DataType value = DataType::Float32; };
template <> struct dtype_of<double> { static constexpr DataType value = DataType::Float64; };
template <> struct dtype_of<std::int8_t> { static constexpr DataType value = DataType::Int8; };
template <> struct dtype_of<std::uint8_t> { static constexpr DataType value = DataType::UInt8; };
template <> struct dtype_of<std::int32_t> { static constexpr DataType value = DataType::Int32; };
template <> struct dtype_of<std::int64_t> { static constexpr DataType value = DataType::Int64; };
template <class T> inline constexpr DataType dtype_v = dtype_of<std::remove_cv_t<T>>::value;

/// True for the element types above.
template <class T>
concept Element = requires { dtype_of<std::remove_cv_t<T>>::value; };

/// Bytes per element.
std::size_t size_of(DataType dtype) noexcept;
/// "float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64".
std::string_view to_string(DataType dtype) noexcept;
/// Inverse of to_string (also accepts nccl-tests' "half", "float", "double", "int"); throws Error.
DataType dtype_from_string(std::string_view name);

/// Where a buffer lives.
enum class MemoryKind { Host, Device };

/// A non-owning, type-erased view of `count` elements of `dtype` at `data`. The memory kind is
/// detected with cudaPointerGetAttributes when mpidist is built with CUDA (host otherwise).
class BufferView {
 public:
  BufferView(void* data, std::size_t count, DataType dtype);
  /// A view of a span (of any extent) of a supported element type; implicit, so spans and
  /// containers converted to spans can be passed where a BufferView is expected.
  template <Element T, std::size_t Extent>
  BufferView(std::span<T, Extent> span)
      : BufferView(const_cast<std::remove_cv_t<T>*>(span.data()), span.size(), dtype_v<T>) {}

  void* data() const noexcept { return data_; }
  std::size_t count() const noexcept { return count_; }
  DataType dtype() const noexcept { return dtype_; }
  std::size_t bytes() const noexcept { return count_ * size_of(dtype_); }
  MemoryKind memory() const noexcept { return memory_; }
  /// The CUDA device owning the memory, or -1 for host memory.
  int device() const noexcept { return device_; }

 private:
  void* data_;
  std::size_t count_;
  DataType dtype_;
  MemoryKind memory_ = MemoryKind::Host;
  int device_ = -1;
};

}  // namespace mpidist
