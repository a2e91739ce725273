// Boost.Serialization support for std::optional, std::variant and std::tuple, which Boost 1.74
// lacks (it serializes boost::optional, boost::variant and std::pair). Newer Boost versions ship
// their own; these definitions step aside for them. Internal; included by objects.hpp.
//
// Boost's own headers for the standard containers come with it, so that a program sending a
// std::vector<std::string>, a std::array<std::string, N> or a std::map needs no Boost include of its own (without one, the
// error is Boost's "has no member named 'serialize'", deep in an instantiation).
#pragma once

#include <boost/serialization/array.hpp>  // std::array (of strings: arrays of numbers are their bytes)
#include <boost/serialization/deque.hpp>
#include <boost/serialization/list.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/nvp.hpp>
#include <boost/serialization/set.hpp>
#include <boost/serialization/split_free.hpp>
#include <boost/serialization/unordered_map.hpp>
#include <boost/serialization/unordered_set.hpp>
#include <boost/serialization/utility.hpp>  // std::pair
#include <boost/serialization/valarray.hpp>
#include <boost/serialization/vector.hpp>
#include <boost/version.hpp>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <variant>

#if BOOST_VERSION < 108400  // Boost 1.84 serializes std::optional itself
namespace boost::serialization {
/// std::optional: a presence flag, then the value.
template <class Archive, class T>
void save(Archive& ar, const std::optional<T>& value, unsigned int) {
  const bool present = value.has_value();
  ar << boost::serialization::make_nvp("present", present);
  if (present) ar << boost::serialization::make_nvp("value", *value);
}
template <class Archive, class T>
void load(Archive& ar, std::optional<T>& value, unsigned int) {
  bool present = false;
  ar >> boost::serialization::make_nvp("present", present);
  if (!present) {
    value.reset();
    return;
  }
  if (!value) value.emplace();
  ar >> boost::serialization::make_nvp("value", *value);
}
template <class Archive, class T>
void serialize(Archive& ar, std::optional<T>& value, unsigned int version) {
  split_free(ar, value, version);
}
}  // namespace boost::serialization
#endif

#if BOOST_VERSION < 107600  // Boost 1.76 added boost/serialization/std_variant.hpp
namespace boost::serialization {
namespace mpidist_detail {
template <std::size_t I, class Archive, class... Ts>
void load_alternative(Archive& ar, std::variant<Ts...>& value, std::size_t index) {
  if constexpr (I < sizeof...(Ts)) {
    if (index != I) return load_alternative<I + 1>(ar, value, index);
    auto& alternative = value.template emplace<I>();
    ar >> boost::serialization::make_nvp("value", alternative);
  }
}
}  // namespace mpidist_detail

/// std::variant: the index of the alternative, then its value.
template <class Archive, class... Ts>
void save(Archive& ar, const std::variant<Ts...>& value, unsigned int) {
  if (value.valueless_by_exception()) throw std::invalid_argument("cannot serialize a valueless std::variant");
  const std::size_t index = value.index();
  ar << boost::serialization::make_nvp("index", index);
  std::visit([&](const auto& alternative) { ar << boost::serialization::make_nvp("value", alternative); }, value);
}
template <class Archive, class... Ts>
void load(Archive& ar, std::variant<Ts...>& value, unsigned int) {
  std::size_t index = 0;
  ar >> boost::serialization::make_nvp("index", index);
  if (index >= sizeof...(Ts)) throw std::invalid_argument("std::variant alternative index out of range");
  mpidist_detail::load_alternative<0>(ar, value, index);
}
template <class Archive, class... Ts>
void serialize(Archive& ar, std::variant<Ts...>& value, unsigned int version) {
  split_free(ar, value, version);
}
/// std::monostate, the empty alternative of a variant: nothing to send.
template <class Archive>
void serialize(Archive&, std::monostate&, unsigned int) {}
}  // namespace boost::serialization
#endif

namespace boost::serialization {
/// std::tuple: its elements in order (no Boost version serializes std::tuple).
template <class Archive, class... Ts>
void serialize(Archive& ar, std::tuple<Ts...>& value, unsigned int) {
  std::apply([&](auto&... element) { ((ar & boost::serialization::make_nvp("element", element)), ...); }, value);
}
}  // namespace boost::serialization
