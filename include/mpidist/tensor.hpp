// Element types and non-owning buffer views for the tensor collectives (collectives.hpp).
#pragma once

#include <bit>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mpidist {

/// The element types of tensor collectives (nccl-tests' names in to_string).
/// UInt32 and UInt64, then the complex types, come last so that the earlier values keep their
/// numbers. Complex64 is std::complex<float>, Complex128 std::complex<double> (torch's names): every
/// collective moves them, and the reductions are sum and avg, as in torch.distributed.
enum class DataType { Float16, BFloat16, Float32, Float64, Int8, UInt8, Int32, Int64, UInt32, UInt64, Complex64, Complex128 };

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

namespace detail {
/// Character types: integers to the compiler, text to the reader (and plain char's signedness
/// depends on the platform), so they are not tensor elements.
template <class T>
inline constexpr bool is_character_v = std::is_same_v<T, char> || std::is_same_v<T, wchar_t> ||
                                       std::is_same_v<T, char8_t> || std::is_same_v<T, char16_t> ||
                                       std::is_same_v<T, char32_t>;

/// The integer types with an NCCL counterpart: 8, 32 or 64 bits (NCCL has no 16-bit integers).
template <class T>
concept TensorInteger = std::is_integral_v<T> && !std::is_same_v<T, bool> && !is_character_v<T> &&
                        (sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8);

template <std::size_t Bytes, bool Signed>
constexpr DataType integer_dtype() noexcept {
  if constexpr (Bytes == 1) return Signed ? DataType::Int8 : DataType::UInt8;
  else if constexpr (Bytes == 4) return Signed ? DataType::Int32 : DataType::UInt32;
  else return Signed ? DataType::Int64 : DataType::UInt64;
}
}  // namespace detail

/// dtype_of<T>::value: the DataType of a (cv-unqualified) C++ element type; no value for other
/// types. Integers map by size and signedness, not by name, so `long` and `long long` (either may
/// be std::int64_t) are both Int64 and `unsigned long` is UInt64 on LP64.
template <class T> struct dtype_of;
template <> struct dtype_of<float16> { static constexpr DataType value = DataType::Float16; };
template <> struct dtype_of<bfloat16> { static constexpr DataType value = DataType::BFloat16; };
template <> struct dtype_of<float> { static constexpr DataType value = DataType::Float32; };
template <> struct dtype_of<double> { static constexpr DataType value = DataType::Float64; };
template <> struct dtype_of<std::complex<float>> { static constexpr DataType value = DataType::Complex64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DataType value = DataType::Complex128; };
/// Raw bytes (`std::as_bytes(std::span(v))`, a `std::vector<std::byte>`): uint8 elements.
template <> struct dtype_of<std::byte> { static constexpr DataType value = DataType::UInt8; };
template <detail::TensorInteger T>
struct dtype_of<T> {
  static constexpr DataType value = detail::integer_dtype<sizeof(T), std::is_signed_v<T>>();
};

/// True for the element types above.
template <class T>
concept Element = requires { dtype_of<std::remove_cv_t<T>>::value; };

namespace detail {
/// dtype_of for T, or a compile error that names the problem (a bare concept failure would not).
template <class T>
consteval DataType element_dtype() {
  using U = std::remove_cv_t<T>;
  constexpr bool is_short = std::is_integral_v<U> && sizeof(U) == 2 && !is_character_v<U>;
  constexpr bool named = std::is_same_v<U, bool> || is_character_v<U> || std::is_same_v<U, long double> ||
                         std::is_same_v<U, std::complex<long double>> || is_short;
  static_assert(!std::is_same_v<U, bool>, "mpidist: bool is not a tensor element type; use std::uint8_t");
  static_assert(!std::is_same_v<U, char>,
                "mpidist: char is not a tensor element type (its signedness varies); use std::int8_t or std::uint8_t");
  static_assert(!is_character_v<U> || std::is_same_v<U, char>,
                "mpidist: wchar_t, char8_t, char16_t and char32_t are not tensor element types; use a fixed-width "
                "integer such as std::uint32_t");
  static_assert(!std::is_same_v<U, long double>,
                "mpidist: long double is not a tensor element type (NCCL has none); use double");
  static_assert(!std::is_same_v<U, std::complex<long double>>,
                "mpidist: std::complex<long double> is not a tensor element type; use std::complex<double>");
  static_assert(!is_short,
                "mpidist: 16-bit integers are not tensor element types (NCCL has none); use std::int32_t or "
                "std::uint32_t");
  static_assert(Element<U> || named,  // one message per mistake
                "mpidist: not a tensor element type; use float16, bfloat16, float, double, std::complex<float>, "
                "std::complex<double> or an 8-, 32- or 64-bit integer");
  if constexpr (Element<U>) return dtype_of<U>::value;
  else return DataType::UInt8;  // unreachable: a static_assert above failed
}
}  // namespace detail

/// The DataType of T (cv-qualifiers ignored); a named compile error for other types.
template <class T> inline constexpr DataType dtype_v = detail::element_dtype<T>();

/// Bytes per element.
std::size_t size_of(DataType dtype) noexcept;
/// "float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64", "uint32", "uint64",
/// "complex64", "complex128".
std::string_view to_string(DataType dtype) noexcept;
/// Inverse of to_string (also accepts nccl-tests' "half", "float", "double", "int" and torch's
/// "cfloat", "cdouble"); throws Error.
DataType dtype_from_string(std::string_view name);

/// Where a buffer lives.
enum class MemoryKind { Host, Device };

namespace detail {
/// Whether T is a std::span (the object calls leave spans to the tensor calls; a container is not one).
template <class T>
struct is_std_span : std::false_type {};
template <class E, std::size_t N>
struct is_std_span<std::span<E, N>> : std::true_type {};
/// A container of tensor elements (std::vector<float>, std::array<int, N>, const or not), other
/// than a span (which has a view of its own).
template <class C>
concept ElementContainer = std::ranges::contiguous_range<C&> && std::ranges::sized_range<C&> &&
                           !is_std_span<std::remove_cv_t<C>>::value && Element<std::ranges::range_value_t<C&>>;
/// Const elements (a std::span<const float>, a const float*): what a call only reads.
template <class T>
concept ConstElement = Element<T> && std::is_const_v<T>;
/// Always true: makes the explicit BufferView constructors for const elements more constrained
/// than the implicit ones, which only copy-initialization (passing a span to a call) reaches.
template <class T>
concept SpelledOut = true;
template <class T>
consteval DataType refuse_const_elements() {
  static_assert(!std::is_const_v<T>,
                "mpidist: this call writes into the buffer, and a span of const elements (or a pointer to "
                "const) is read-only: pass a std::span<T> of writable memory. Buffers a call only reads (the "
                "`in` of all_gather, what send sends) take const spans; mpidist::InputView(ptr, n) views them");
  return dtype_v<std::remove_cv_t<T>>;
}
/// One whose elements can be written (not a const one).
template <class C>
concept WritableContainer =
    ElementContainer<C> && !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<C&>>>;
}  // namespace detail

/// A non-owning, type-erased view of `count` elements of `dtype` at `data`. The memory kind is
/// detected with cudaPointerGetAttributes when mpidist is built with CUDA (host otherwise).
class BufferView {
 public:
  BufferView(void* data, std::size_t count, DataType dtype);
  /// A view of a span (of any extent) of a supported element type; implicit, so spans and
  /// containers converted to spans can be passed where a BufferView is expected.
  template <Element T, std::size_t Extent>
  requires(!std::is_const_v<T>)
  BufferView(std::span<T, Extent> span) : BufferView(span.data(), span.size(), dtype_v<T>) {}
  /// `count` elements at a typed pointer, host or device memory (`BufferView(d_grad, n)` on a
  /// cudaMalloc'ed float*): the dtype is the pointer's, as std::span(data, count) would view it.
  template <Element T>
  requires(!std::is_const_v<T>)
  BufferView(T* data, std::size_t count) : BufferView(data, count, dtype_v<T>) {}
  /// Const elements: passed where a call writes (all_reduce(std::span<const float>(v))), a compile
  /// error that says so, not a write into const memory. Spelled out, BufferView(std::span(in)) is
  /// the caller's own cast, as before; calls that only read take them as an InputView.
  template <detail::ConstElement T, std::size_t Extent>
  BufferView(std::span<T, Extent>) : BufferView(nullptr, 0, detail::refuse_const_elements<T>()) {}
  template <detail::ConstElement T, std::size_t Extent>
  requires detail::SpelledOut<T>
  explicit BufferView(std::span<T, Extent> span)
      : BufferView(const_cast<std::remove_cv_t<T>*>(span.data()), span.size(), dtype_v<T>) {}
  template <detail::ConstElement T>
  BufferView(T*, std::size_t) : BufferView(nullptr, 0, detail::refuse_const_elements<T>()) {}
  template <detail::ConstElement T>
  requires detail::SpelledOut<T>
  explicit BufferView(T* data, std::size_t count)
      : BufferView(const_cast<std::remove_cv_t<T>*>(data), count, dtype_v<T>) {}
  /// A non-const container of elements (std::vector<float>, std::array<int, N>): its elements, as
  /// std::span(v) views them; implicit, so `all_gather(in, out)` and `isend(v, dest)` take vectors.
  /// A const container is not one (a call may write what it views): it passes where a call only
  /// reads, as an InputView (below). Where a call also has a form for std::vector itself (the
  /// object forms: all_reduce(v, op), broadcast(v), send(v, dest)), that form is the exact match
  /// and is chosen.
  template <detail::WritableContainer C>
  BufferView(C& container) : BufferView(std::span(std::ranges::data(container), std::ranges::size(container))) {}
  /// Any other span or typed pointer is a compile error saying why (`all_reduce(std::span(flags))`
  /// on bools): without these overloads the call would fail as "no matching function".
  template <class T, std::size_t Extent>
  requires(!Element<T>)
  BufferView(std::span<T, Extent>) : BufferView(nullptr, 0, detail::element_dtype<std::remove_cv_t<T>>()) {}
  template <class T>
  requires(!Element<T> && !std::is_void_v<T>)
  BufferView(T*, std::size_t) : BufferView(nullptr, 0, detail::element_dtype<std::remove_cv_t<T>>()) {}

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

/// A buffer a call only reads: the `in` of the collectives, what send, isend and P2POp::send
/// send. A BufferView, or anything that converts to one, and also a const container
/// (`const std::vector<float>&`), which a BufferView refuses because a call may write what it views.
class InputView : public BufferView {
 public:
  using BufferView::BufferView;
  InputView(const BufferView& view) : BufferView(view) {}
  /// Const elements, which a BufferView takes only spelled out: `send(std::span<const float>(edge), dest)`.
  template <Element T, std::size_t Extent>
  InputView(std::span<const T, Extent> span) : BufferView(span) {}
  template <Element T>
  InputView(const T* data, std::size_t count) : BufferView(data, count) {}
  template <detail::ElementContainer C>
  InputView(const C& container) : InputView(std::span(std::ranges::data(container), std::ranges::size(container))) {}
};

namespace detail {
/// `buffer` as the view of what a call writes: converted implicitly, so const elements are the
/// compile error above (the span forms of the calls forward through it).
inline BufferView written(BufferView buffer) noexcept { return buffer; }

/// A list of tensors as users hold them, each a BufferView, a span or a non-const container
/// (std::vector<std::vector<float>>, a vector of spans), other than the list of BufferViews the
/// calls take as it is.
template <class R>
concept TensorList = std::ranges::input_range<R> &&
                     std::convertible_to<std::ranges::range_reference_t<R>, BufferView> &&
                     !std::convertible_to<R, std::span<const BufferView>>;

template <class R>
std::vector<BufferView> as_buffers(R& tensors) {
  std::vector<BufferView> views;
  if constexpr (std::ranges::sized_range<R>) views.reserve(std::ranges::size(tensors));
  for (auto&& tensor : tensors) views.push_back(written(tensor));
  return views;
}

/// A list of tensors a call only reads, as users hold them: each an InputView, a span or a
/// container, const or not.
template <class R>
concept SingleTensor =  // a tensor itself, not a list: elements first, so a span of views never asks InputView
    Element<std::remove_cv_t<std::ranges::range_value_t<const R>>> && std::convertible_to<const R&, InputView>;
template <class R>
concept InputList = std::ranges::input_range<const R> &&
                    std::convertible_to<std::ranges::range_reference_t<const R>, InputView> &&
                    !std::convertible_to<const R&, std::span<const InputView>> && !SingleTensor<R>;

/// Either kind of list, also one the calls take as it is (a std::vector<InputView>, a
/// std::vector<BufferView>): where a call takes two lists, either may be either.
template <class R>
concept AnyInputList = InputList<R> || std::convertible_to<const R&, std::span<const InputView>>;
template <class R>
concept AnyTensorList = TensorList<R> || std::convertible_to<R&, std::span<const BufferView>>;

/// A list a non-blocking call may take as a temporary: its tensors are views of memory held
/// elsewhere (BufferViews, InputViews, spans). A list of containers holds the tensors themselves,
/// which must outlive the call's Work: it is taken as an lvalue only.
template <class R>
concept ListOfViews = std::same_as<std::ranges::range_value_t<R>, BufferView> ||
                      std::same_as<std::ranges::range_value_t<R>, InputView> ||
                      std::ranges::view<std::ranges::range_value_t<R>>;
template <class R>
concept KeptList = std::is_lvalue_reference_v<R> || ListOfViews<std::remove_cvref_t<R>>;

template <class R>
std::vector<InputView> as_inputs(const R& tensors) {
  std::vector<InputView> views;
  if constexpr (std::ranges::sized_range<const R>) views.reserve(std::ranges::size(tensors));
  for (auto&& tensor : tensors) views.push_back(InputView(tensor));
  return views;
}
}  // namespace detail

}  // namespace mpidist
