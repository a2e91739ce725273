// The element-wise reduction kernels of the shared-memory collectives (built at -O3).
#include "shm/reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/complex_elements.hpp"

namespace mpidist::detail::shm {
namespace {

// Signed overflow is undefined in C++; MPI's integer sums wrap, so compute in the unsigned twin.
template <class T, bool = std::is_integral_v<T>>
struct WrappingOf { using type = T; };
template <class T>
struct WrappingOf<T, true> { using type = std::make_unsigned_t<T>; };
template <class T>
using Wrapping = typename WrappingOf<T>::type;

struct Add {
  template <class T> static T apply(T a, T b) {
    return static_cast<T>(static_cast<Wrapping<T>>(a) + static_cast<Wrapping<T>>(b));
  }
};
struct Multiply {
  template <class T> static T apply(T a, T b) {
    return static_cast<T>(static_cast<Wrapping<T>>(a) * static_cast<Wrapping<T>>(b));
  }
};
struct Smaller {
  template <class T> static T apply(T a, T b) { return b < a ? b : a; }
};
struct Larger {
  template <class T> static T apply(T a, T b) { return b > a ? b : a; }
};
// Integers only: the front end refuses bitwise reductions on other elements (call_checks.cpp).
struct BitAnd {
  template <class T> static T apply(T a, T b) { return static_cast<T>(a & b); }
};
struct BitOr {
  template <class T> static T apply(T a, T b) { return static_cast<T>(a | b); }
};
struct BitXor {
  template <class T> static T apply(T a, T b) { return static_cast<T>(a ^ b); }
};

// Halves are computed in float; everything else in its own type.
template <class T>
using Accumulator = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

// One L1-sized block of a single source, converted to the accumulator type.
template <class A, class T>
void load(A* __restrict acc, const T* __restrict s, std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) acc[i] = static_cast<A>(s[i]);
}
template <class Op, class A, class T>
void fold(A* __restrict acc, const T* __restrict s, std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) acc[i] = Op::apply(acc[i], static_cast<A>(s[i]));
}
template <class Op, class A, class T>
void first_pair(A* __restrict acc, const T* __restrict a, const T* __restrict b, std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) acc[i] = Op::apply(static_cast<A>(a[i]), static_cast<A>(b[i]));
}
template <class A, class T>
void store(T* __restrict dest, const A* __restrict acc, std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) dest[i] = static_cast<T>(acc[i]);
}

// Block by block through an accumulator on the stack: the sources of a block are all read before
// dest is written, so dest may be any one of them, and each block stays in L1 between passes.
template <class Op, class T>
void reduce_as(void* dest, const void* const* sources, int n, std::size_t count) {
  using A = Accumulator<T>;
  constexpr std::size_t block = 2048 / sizeof(A) * 4;  // 8 KiB
  // The accumulator starts 1 KiB into a page. The segment's halves, which the loops read and
  // write beside it, are page-aligned, and a block at their offset in its page reduced 3-6%
  // slower (cache-set and 4K-aliasing conflicts). Left to the stack's chance placement, the
  // lane's thread ran 4% slower than the caller's on the same call.
  constexpr std::size_t skew = 1024 / sizeof(A);
  alignas(4096) A storage[block + skew];
  A* const acc = storage + skew;
  auto* d = static_cast<T*>(dest);
  auto* s = reinterpret_cast<const T* const*>(sources);
  for (std::size_t first = 0; first < count; first += block) {
    const std::size_t m = std::min(block, count - first);
    if (n == 1) load(acc, s[0] + first, m);
    else first_pair<Op>(acc, s[0] + first, s[1] + first, m);
    for (int k = 2; k < n; ++k) fold<Op>(acc, s[k] + first, m);
    store(d + first, acc, m);
  }
}

template <class T>
void reduce_type(void* dest, const void* const* sources, int n, std::size_t count, ReduceOp op) {
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case ReduceOp::BitAnd: return reduce_as<BitAnd, T>(dest, sources, n, count);
      case ReduceOp::BitOr: return reduce_as<BitOr, T>(dest, sources, n, count);
      case ReduceOp::BitXor: return reduce_as<BitXor, T>(dest, sources, n, count);
      default: break;
    }
  }
  switch (op) {
    case ReduceOp::Product: return reduce_as<Multiply, T>(dest, sources, n, count);
    case ReduceOp::Min: return reduce_as<Smaller, T>(dest, sources, n, count);
    case ReduceOp::Max: return reduce_as<Larger, T>(dest, sources, n, count);
    default: return reduce_as<Add, T>(dest, sources, n, count);  // Sum, Avg
  }
}

}  // namespace

void reduce(void* dest, const void* const* sources, int n, std::size_t count, DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::Float16: return reduce_type<float16>(dest, sources, n, count, op);
    case DataType::BFloat16: return reduce_type<bfloat16>(dest, sources, n, count, op);
    case DataType::Float32: return reduce_type<float>(dest, sources, n, count, op);
    case DataType::Float64: return reduce_type<double>(dest, sources, n, count, op);
    case DataType::Int8: return reduce_type<std::int8_t>(dest, sources, n, count, op);
    case DataType::UInt8: return reduce_type<std::uint8_t>(dest, sources, n, count, op);
    case DataType::Int32: return reduce_type<std::int32_t>(dest, sources, n, count, op);
    case DataType::Int64: return reduce_type<std::int64_t>(dest, sources, n, count, op);
    case DataType::UInt32: return reduce_type<std::uint32_t>(dest, sources, n, count, op);
    case DataType::UInt64: return reduce_type<std::uint64_t>(dest, sources, n, count, op);
    case DataType::Complex64:
    case DataType::Complex128: {  // sums only (call_checks.cpp): part by part
      const RealParts parts = real_parts(dtype, count);
      return reduce(dest, sources, n, parts.count, parts.dtype, op);
    }
  }
}

}  // namespace mpidist::detail::shm
