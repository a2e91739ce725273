// Loading std::vector, std::list and std::deque from an InputArchive without believing the element
// count. Boost's own loaders allocate the announced count up front (vector: reserve or resize;
// list, deque: resize), so a payload announcing 65,536 elements of 4 KiB in 32 bytes allocates
// 256 MiB before the first element fails to decode. These overloads read the same format and grow
// the container with what actually decodes: a count that lies runs out of bytes first. Found by
// argument-dependent lookup from Boost's split_free (InputArchive lives in this namespace) and
// preferred over Boost's templates as more specialized. Internal; included by object_archive.hpp.
#pragma once

#include <boost/serialization/collection_size_type.hpp>
#include <boost/serialization/detail/stack_constructor.hpp>
#include <boost/serialization/item_version_type.hpp>
#include <boost/serialization/library_version_type.hpp>
#include <boost/serialization/nvp.hpp>
#include <algorithm>
#include <cstddef>
#include <deque>
#include <list>
#include <type_traits>
#include <utility>
#include <vector>

namespace mpidist::detail {

class InputArchive;

/// The element count of a container, checked against the bytes left (see
/// InputArchive::load_override), and the element version that follows it.
template <class Archive>
std::size_t load_collection_header(Archive& ar, boost::serialization::item_version_type& item_version) {
  boost::serialization::collection_size_type count;
  ar >> boost::serialization::make_nvp("count", count);
  if (boost::serialization::library_version_type(3) < ar.get_library_version())
    ar >> boost::serialization::make_nvp("item_version", item_version);
  return count;
}

/// Appends `count` elements one at a time, each constructed and loaded as Boost would.
template <class Archive, class Container>
void load_elements(Archive& ar, Container& t, std::size_t count, boost::serialization::item_version_type version) {
  using U = typename Container::value_type;
  while (count-- > 0) {
    boost::serialization::detail::stack_construct<Archive, U> u(ar, version);
    ar >> boost::serialization::make_nvp("item", u.reference());
    t.push_back(std::move(u.reference()));
    ar.reset_object_address(&t.back(), u.address());
  }
}

/// std::vector: bitwise-serializable elements lie as one block, whose size is checked before the
/// vector is sized; other elements are decoded one by one, after reserving no more elements than
/// the bytes left could hold.
template <class Archive, class U, class A>
requires std::is_same_v<Archive, InputArchive> && (!std::is_same_v<U, bool>)
void load(Archive& ar, std::vector<U, A>& t, unsigned int) {
  t.clear();
  if constexpr (boost::serialization::is_bitwise_serializable<U>::value) {
    boost::serialization::collection_size_type count;
    ar >> boost::serialization::make_nvp("count", count);
    if (static_cast<std::size_t>(count) > ar.left() / sizeof(U))
      throw_corrupt_payload("vector", static_cast<std::size_t>(count) * sizeof(U), ar.left());
    t.resize(count);
    if (!t.empty()) ar >> boost::serialization::make_array<U, boost::serialization::collection_size_type>(t.data(), count);
  } else {
    boost::serialization::item_version_type version(0);
    const std::size_t count = load_collection_header(ar, version);
    t.reserve(std::min(count, ar.left() / sizeof(U)));
    load_elements(ar, t, count, version);
  }
}

/// std::list and std::deque: elements decoded one by one (Boost resizes to the count first).
template <class Archive, class U, class A>
requires std::is_same_v<Archive, InputArchive>
void load(Archive& ar, std::list<U, A>& t, unsigned int) {
  t.clear();
  boost::serialization::item_version_type version(0);
  load_elements(ar, t, load_collection_header(ar, version), version);
}

template <class Archive, class U, class A>
requires std::is_same_v<Archive, InputArchive>
void load(Archive& ar, std::deque<U, A>& t, unsigned int) {
  t.clear();
  boost::serialization::item_version_type version(0);
  load_elements(ar, t, load_collection_header(ar, version), version);
}

}  // namespace mpidist::detail
