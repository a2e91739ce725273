// The Boost.Serialization archives the object collectives use: a binary format written straight
// into a byte vector and read back from a byte range with every size checked against the bytes
// left, so a corrupt or mismatched payload is an Error, never a crash or a giant allocation.
// Internal; the archives' serializer maps are instantiated in lib/objects/archive.cpp.
#pragma once

#include <boost/archive/basic_archive.hpp>
#include <boost/archive/detail/common_iarchive.hpp>
#include <boost/archive/detail/common_oarchive.hpp>
#include <boost/archive/detail/register_archive.hpp>
#include <boost/serialization/array_wrapper.hpp>
#include <boost/serialization/collection_size_type.hpp>
#include <boost/serialization/is_bitwise_serializable.hpp>
#include <boost/serialization/level.hpp>
#include <boost/serialization/serialization.hpp>
#include <boost/serialization/version.hpp>
#include <boost/serialization/string.hpp>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace mpidist::detail {

/// Class types that both archives serialize by calling their serialize() directly, without
/// Boost's per-object bookkeeping (class-info records and object tracking in a std::set, about
/// 100 ns per object, more than the whole transfer of a small object). Every rank runs the same
/// program, so the class versions need not travel: both sides use version<T>. Pointers keep
/// Boost's path (and with it their own tracking); an object reached both by value and by pointer
/// arrives as two copies.
template <class T>
inline constexpr bool serialize_directly =
    std::is_class_v<T> && boost::serialization::implementation_level<T>::value >= boost::serialization::object_serializable;

/// Throws Error("<operation>", "...") for a payload that cannot be the value it claims to be.
[[noreturn]] void throw_corrupt_payload(const char* what, std::size_t wanted, std::size_t left);

/// Writes Boost.Serialization's binary representation (native byte order, sizes as std::size_t)
/// into a std::vector<char>. Unlike boost::archive::binary_oarchive it needs no stream and no
/// locale, which makes a small object ~5× cheaper to encode; arrays of bitwise-serializable
/// elements (a std::vector<float>) are written as one block.
class OutputArchive : public boost::archive::detail::common_oarchive<OutputArchive> {
 public:
  /// Appends to `out`.
  explicit OutputArchive(std::vector<char>& out)
      : boost::archive::detail::common_oarchive<OutputArchive>(boost::archive::no_header), out_(out) {}

  // The archive interface Boost.Serialization calls into (through save_access/interface_oarchive).
  template <class T>
  void save(const T& t) {
    save_binary(&t, sizeof(T));
  }
  void save(const std::string& s) {
    const std::size_t length = s.size();
    save(length);
    save_binary(s.data(), length);
  }
  void save(const std::wstring& s) {
    const std::size_t length = s.size();
    save(length);
    save_binary(s.data(), length * sizeof(wchar_t));
  }
  void save_binary(const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    out_.insert(out_.end(), p, p + bytes);
  }
  struct use_array_optimization {
    template <class T>
    struct apply : boost::serialization::is_bitwise_serializable<T> {};
  };
  template <class V>
  void save_array(const boost::serialization::array_wrapper<V>& a, unsigned int) {
    save_binary(a.address(), a.count() * sizeof(V));
  }
  template <class T>
  void save_override(const T& t) {
    using U = std::remove_const_t<T>;  // make_nvp() hands out const wrappers
    if constexpr (serialize_directly<U>)
      boost::serialization::serialize_adl(*this, const_cast<U&>(t), boost::serialization::version<U>::value);
    else
      this->boost::archive::detail::common_oarchive<OutputArchive>::save_override(t);
  }
  void save_override(const boost::archive::class_id_optional_type&) {}
  void save_override(const boost::archive::class_name_type& t) {
    const std::string name(t);
    *this << name;
  }

 private:
  std::vector<char>& out_;
};

/// Reads what OutputArchive wrote from [begin, end). Every read and every announced length is
/// checked against the bytes left before anything is allocated.
class InputArchive : public boost::archive::detail::common_iarchive<InputArchive> {
 public:
  InputArchive(const std::byte* begin, const std::byte* end)
      : boost::archive::detail::common_iarchive<InputArchive>(boost::archive::no_header), at_(begin), end_(end) {}

  /// Bytes not consumed yet.
  std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - at_); }

  template <class T>
  void load(T& t) {
    load_binary(&t, sizeof(T));
  }
  void load(bool& t) {
    unsigned char byte = 0;
    load_binary(&byte, 1);
    if (byte > 1) throw_corrupt_payload("bool", byte, left());
    t = byte == 1;
  }
  void load(std::string& s) {
    std::size_t length = 0;
    load(length);
    if (length > left()) throw_corrupt_payload("string", length, left());
    s.assign(reinterpret_cast<const char*>(at_), length);
    at_ += length;
  }
  void load(std::wstring& s) {
    std::size_t length = 0;
    load(length);
    if (length > left() / sizeof(wchar_t)) throw_corrupt_payload("wstring", length * sizeof(wchar_t), left());
    s.resize(length);
    load_binary(s.data(), length * sizeof(wchar_t));
  }
  void load_binary(void* data, std::size_t bytes) {
    if (bytes > left()) throw_corrupt_payload("value", bytes, left());
    if (bytes > 0) std::memcpy(data, at_, bytes);
    at_ += bytes;
  }
  struct use_array_optimization {
    template <class T>
    struct apply : boost::serialization::is_bitwise_serializable<T> {};
  };
  template <class V>
  void load_array(boost::serialization::array_wrapper<V>& a, unsigned int) {
    load_binary(a.address(), a.count() * sizeof(V));
  }
  template <class T>
  void load_override(T& t) {
    using U = std::remove_const_t<T>;
    if constexpr (serialize_directly<U>)
      boost::serialization::serialize_adl(*this, const_cast<U&>(t), boost::serialization::version<U>::value);
    else
      this->boost::archive::detail::common_iarchive<InputArchive>::load_override(t);
  }
  void load_override(boost::archive::class_id_optional_type&) {}
  void load_override(boost::archive::class_name_type& t) {
    std::string name;
    *this >> name;
    if (name.size() >= BOOST_SERIALIZATION_MAX_KEY_SIZE) throw_corrupt_payload("class name", name.size(), left());
    std::memcpy(t.t, name.data(), name.size());
    t.t[name.size()] = '\0';
  }
  // A container's element count precedes its elements, which Boost allocates before reading
  // them. Every element takes at least one byte, except elements that serialize to nothing (an
  // empty struct): for those up to max_empty_elements are believed.
  void load_override(boost::serialization::collection_size_type& t) {
    this->boost::archive::detail::common_iarchive<InputArchive>::load_override(t);
    const std::size_t count = t;
    if (count > left() && count > max_empty_elements) throw_corrupt_payload("container", count, left());
  }

  static constexpr std::size_t max_empty_elements = std::size_t{1} << 16;

 private:
  const std::byte* at_;
  const std::byte* end_;
};

}  // namespace mpidist::detail

BOOST_SERIALIZATION_REGISTER_ARCHIVE(mpidist::detail::OutputArchive)
BOOST_SERIALIZATION_USE_ARRAY_OPTIMIZATION(mpidist::detail::OutputArchive)
BOOST_SERIALIZATION_REGISTER_ARCHIVE(mpidist::detail::InputArchive)
BOOST_SERIALIZATION_USE_ARRAY_OPTIMIZATION(mpidist::detail::InputArchive)

#include "mpidist/detail/object_containers.hpp"  // NOLINT: needs InputArchive complete at instantiation
