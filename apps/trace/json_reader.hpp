// A strict, bounded JSON reader for mpidist-trace: the dumps it reads may be cut short by a dying
// process, or be any file at all, so every limit is checked and every failure is a JsonError
// naming the file and the byte offset, never a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mpidist::trace {

/// Unreadable input: the message names the source and where.
class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A parsed JSON value. Integers are kept exactly (a sequence number past 2^53 stays right);
/// other numbers as double.
class Json {
 public:
  enum class Kind { Null, Bool, Integer, Number, String, Array, Object };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Kind kind() const noexcept { return kind_; }
  bool is(Kind k) const noexcept { return kind_ == k; }
  /// The field `key` of an object, or nullptr (also when this is not an object).
  const Json* find(std::string_view key) const noexcept;
  bool as_bool() const noexcept { return integer_ != 0; }
  /// Integer values; `negative` says the sign (magnitude in integer()).
  bool negative() const noexcept { return negative_; }
  std::uint64_t magnitude() const noexcept { return integer_; }
  const std::string& as_string() const noexcept { return string_; }
  const Array& as_array() const noexcept { return array_; }
  const Object& as_object() const noexcept { return object_; }

  static Json null() { return Json(); }
  static Json boolean(bool v);
  static Json integer(bool negative, std::uint64_t magnitude);
  static Json number(double v);
  static Json string(std::string v);
  static Json array(Array v);
  static Json object(Object v);

 private:
  Kind kind_ = Kind::Null;
  bool negative_ = false;
  std::uint64_t integer_ = 0;
  double number_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

/// Limits on what parse_json accepts; a document past them is a JsonError.
struct JsonLimits {
  std::size_t max_depth = 32;
};

/// Parses one JSON document (RFC 8259: no comments, no trailing commas). Errors name `source`
/// and the byte offset.
Json parse_json(std::string_view text, const std::string& source, const JsonLimits& limits = {});

}  // namespace mpidist::trace
