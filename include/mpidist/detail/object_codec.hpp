// How a C++ value becomes bytes for the object collectives, and back. Three ways, chosen by type:
// trivially copyable values are their own bytes (inside the transport's frame); std::vector/std::string
// of such elements send their element bytes as they lie in memory; everything else goes through
// Boost.Serialization into one contiguous buffer. Internal; included by objects.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "mpidist/detail/object_archive.hpp"
#include "mpidist/detail/object_transport.hpp"
#include "mpidist/detail/type_names.hpp"
#include "mpidist/guards.hpp"
#include "mpidist/tensor.hpp"

namespace mpidist {

/// Specialize as std::true_type to send a trivially copyable type through its Boost.Serialization
/// serialize() instead of as its bytes (for a type that holds a handle or a pointer).
template <class T>
struct always_serialize : std::false_type {};

namespace detail {

/// What the object collectives accept: a complete, copyable object type that is neither a tensor
/// view (BufferView, std::span: those go to the tensor collectives of collectives.hpp), nor a
/// Communicator (so a world form never takes a communicator-first call's communicator for the
/// value), nor a raw pointer or C array (whose bytes mean nothing on another rank).
template <class T>
concept ObjectValue = std::is_object_v<T> && !std::is_array_v<T> && !std::is_pointer_v<T> &&
                      !std::is_member_pointer_v<T> && std::is_copy_constructible_v<T> &&
                      !std::is_same_v<std::remove_cv_t<T>, BufferView> && !is_std_span<std::remove_cv_t<T>>::value &&
                      !std::is_same_v<std::remove_cv_t<T>, Communicator>;

/// Values sent as their own bytes: trivially copyable, no pointers, no opt-out.
template <class T>
concept ByteCopyable =
    ObjectValue<T> && std::is_trivially_copyable_v<T> && !std::is_null_pointer_v<T> && !always_serialize<T>::value;

/// std::vector and std::basic_string of ByteCopyable elements (not std::vector<bool>).
template <class T>
struct contiguous_of : std::false_type {};
template <ByteCopyable E, class A>
requires(!std::is_same_v<E, bool>) struct contiguous_of<std::vector<E, A>> : std::true_type {
  using element = E;
};
template <ByteCopyable C, class Tr, class A>
struct contiguous_of<std::basic_string<C, Tr, A>> : std::true_type {
  using element = C;
};
template <class T>
concept ContiguousBytes = ObjectValue<T> && contiguous_of<T>::value;

/// A fingerprint of T that is the same on every rank of one program: a payload of another type
/// is refused instead of misread, naming both types. Initialized (and registered under T's name)
/// at start-up, so a rank can name a type another rank sent before using it itself.
template <class T>
inline const std::uint64_t type_tag_v = register_object_type(typeid(T).name());

template <class T>
std::uint64_t type_tag() {
  return type_tag_v<T>;
}

/// T as object calls fingerprint it.
template <class T>
ObjectType object_type() {
  static const std::string name = readable_type_name(typeid(T).name());  // once per type
  return ObjectType{type_tag<T>(), name.c_str()};
}

/// A value's bytes: a view of the value itself (ByteCopyable, ContiguousBytes) or of the archive
/// it was serialized into.
class Encoded {
 public:
  Encoded() = default;
  Encoded(const void* data, std::size_t size) : data_(data), size_(size) {}
  const void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  const void* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Serializes `value` through Boost.Serialization, appending to `out`.
template <class T>
void serialize_into(const T& value, std::vector<char>& out) {
  OutputArchive archive(out);
  archive << value;
}

/// The buffer archives are written into, kept per thread between calls so that encoding a small
/// object allocates nothing; one past max_kept_bytes is released at the next encode.
inline thread_local std::vector<char> t_encode_buffer;
inline constexpr std::size_t max_kept_bytes = std::size_t{16} << 20;

/// The bytes that carry `value`. An archive's bytes live in t_encode_buffer until this thread's
/// next encode.
template <ObjectValue T>
Encoded encode(const T& value) {
  if constexpr (ByteCopyable<T>) {
    return Encoded(std::addressof(value), sizeof(T));
  } else if constexpr (ContiguousBytes<T>) {
    return Encoded(value.data(), value.size() * sizeof(typename contiguous_of<T>::element));
  } else {
    auto& out = t_encode_buffer;
    if (out.capacity() > max_kept_bytes) std::vector<char>().swap(out);
    out.clear();
    serialize_into(value, out);
    return Encoded(out.data(), out.size());
  }
}

/// A ByteCopyable T from its bytes (memcpy into storage implicitly creates the object, C++20).
template <ByteCopyable T>
T from_bytes(const std::byte* data) {
  alignas(T) std::byte storage[sizeof(T)];
  std::memcpy(storage, data, sizeof(T));
  return *std::launder(reinterpret_cast<T*>(storage));
}

/// Error for a payload from `rank` that is not a T: "<operation>: cannot deserialize ...".
[[noreturn]] void throw_bad_value(const char* operation, int rank, const std::type_info& type, const char* why);
/// Turns the exception in flight (from Boost or the archive's checks) into such an Error.
[[noreturn]] void rethrow_as_bad_value(const char* operation, int rank, const std::type_info& type);

/// The T that rank `rank` encoded in [data, data + size).
template <ObjectValue T>
T decode(const char* operation, int rank, const std::byte* data, std::size_t size) {
  if constexpr (ByteCopyable<T>) {
    if (size != sizeof(T)) throw_bad_value(operation, rank, typeid(T), "wrong size");
    return from_bytes<T>(data);
  } else if constexpr (ContiguousBytes<T>) {
    using E = typename contiguous_of<T>::element;
    if (size % sizeof(E) != 0)
      throw_bad_value(operation, rank, typeid(T), "size is not a multiple of the element size");
    const std::size_t count = size / sizeof(E);
    // Built from the range when it is aligned (one copy, no zero-fill first); gathered payloads
    // of one type always are, a corrupt neighbour's could not be.
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(E) == 0) {
      const E* first = reinterpret_cast<const E*>(data);
      return T(first, first + count);
    }
    T value;
    value.resize(count);
    if (size > 0) std::memcpy(static_cast<void*>(value.data()), data, size);
    return value;
  } else {
    static_assert(std::is_default_constructible_v<T>, "Boost.Serialization loads into a default-constructed T");
    T value;
    try {
      InputArchive archive(data, data + size);
      archive >> value;
      if (archive.left() != 0) throw_bad_value(operation, rank, typeid(T), "bytes left over after the value");
    } catch (...) {
      rethrow_as_bad_value(operation, rank, typeid(T));
    }
    return value;
  }
}

/// Receives one T from the transport: straight into the container's elements for
/// ContiguousBytes (no second copy), else into a byte buffer that take() decodes.
template <ObjectValue T>
class ValueSink final : public PayloadSink {
 public:
  ValueSink(const char* operation, int from) : operation_(operation), from_(from) {}
  /// Receives into `storage`'s memory where it can: a std::vector or std::string of the right size
  /// is neither reallocated nor zero-filled.
  ValueSink(const char* operation, int from, T&& storage) : operation_(operation), from_(from) {
    if constexpr (ContiguousBytes<T>) value_.emplace(std::move(storage));
  }

  std::byte* reserve(std::size_t size) override {
    size_ = size;
    if constexpr (ContiguousBytes<T>) {
      using E = typename contiguous_of<T>::element;
      if (size % sizeof(E) != 0)
        throw_bad_value(operation_, from_, typeid(T), "size is not a multiple of the element size");
      if (!value_) value_.emplace();
      value_->resize(size / sizeof(E));
      return reinterpret_cast<std::byte*>(value_->data());
    } else {
      if (size <= sizeof small_) return small_;  // a small object costs no allocation
      bytes_.reset(new std::byte[size]);
      return bytes_.get();
    }
  }

  /// The received value (call once, after the transport returned).
  T take() {
    if constexpr (ContiguousBytes<T>) {
      return std::move(*value_);
    } else {
      return decode<T>(operation_, from_, bytes_ ? bytes_.get() : small_, size_);
    }
  }

 private:
  const char* operation_;
  int from_;
  std::size_t size_ = 0;
  std::unique_ptr<std::byte[]> bytes_;
  alignas(16) std::byte small_[256];
  std::optional<T> value_;
};

/// Error on this rank for a failure that happened where no other rank is involved (world of one).
[[noreturn]] void throw_local_failure(const char* operation, int rank, const std::exception_ptr& failure);

/// A Payload carrying `encoded`, or `failure_text` when encoding (or computing) the value failed.
inline Payload make_payload(const Encoded& encoded, const std::exception_ptr& failure, std::string& failure_text,
                            std::uint64_t tag) {
  if (!failure) return Payload{encoded.data(), encoded.size(), tag, false};
  failure_text = describe_exception(failure);
  return Payload{failure_text.data(), failure_text.size(), tag, true};
}

/// Root sends *value (or its failure); the others receive it through `sink`. Root gets
/// std::nullopt back (it keeps its own value). Every rank throws Error when root failed.
template <ObjectValue T>
std::optional<T> broadcast_object(const char* operation, const ObjectComm& c, const T* value,
                                  std::exception_ptr failure, int root, ValueSink<T>&& sink) {
  if (c.rank != root) {
    broadcast_payload(operation, c, Payload{nullptr, 0, type_tag<T>(), false}, sink, root);
    return sink.take();
  }
  Encoded encoded;
  if (!failure) failure = capture([&] { encoded = encode(*value); });
  std::string text;
  broadcast_payload(operation, c, make_payload(encoded, failure, text, type_tag<T>()), sink, root);
  return std::nullopt;
}

/// Every rank's value (or failure) to every rank (root < 0) or to root; Error on every rank when
/// any rank failed.
template <ObjectValue T>
GatheredPayloads gather_object(const char* operation, const ObjectComm& c, const T* value, std::exception_ptr failure,
                               int root) {
  Encoded encoded;
  if (!failure) failure = capture([&] { encoded = encode(*value); });
  std::string text;
  const Payload mine = make_payload(encoded, failure, text, type_tag<T>());
  return root < 0 ? all_gather_payload(operation, c, mine) : gather_payload(operation, c, mine, root);
}

/// Encodes root's values for scatter back to back into `buffer`, one Payload per value.
template <ObjectValue T>
void encode_parts(const std::vector<T>& values, std::vector<char>& buffer, std::vector<Payload>& parts,
                  std::uint64_t tag) {
  std::vector<std::size_t> ends;
  for (const auto& value : values) {
    if constexpr (ByteCopyable<T> || ContiguousBytes<T>) {
      const Encoded e = encode(value);
      const char* bytes = static_cast<const char*>(e.data());
      buffer.insert(buffer.end(), bytes, bytes + e.size());
    } else {
      serialize_into(value, buffer);
    }
    ends.push_back(buffer.size());
  }
  // Pointers into the buffer only once it stopped growing.
  std::size_t begin = 0;
  for (auto end : ends) {
    parts.push_back(Payload{buffer.data() + begin, end - begin, tag, false});
    begin = end;
  }
}

/// Decodes every rank's T from `g`, using `own` (this rank's value) for this rank's slot.
template <ObjectValue T>
std::vector<T> decode_all(const char* operation, const ObjectComm& c, const GatheredPayloads& g, const T& own) {
  std::vector<T> values;
  values.reserve(static_cast<std::size_t>(c.size));
  for (int r = 0; r < c.size; ++r) values.push_back(r == c.rank ? own : decode<T>(operation, r, g.data(r), g.size(r)));
  return values;
}

}  // namespace detail
}  // namespace mpidist
