// A small JSON reader, enough for --compare to read an earlier run back (objects, arrays,
// strings, numbers, true/false/null). The writer quotes with lib/core/json.hpp's json_string().
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bench {

/// A parsed JSON value. Accessors throw std::runtime_error naming the key or the expected kind.
/// (Plain members rather than a recursive std::variant, which g++ 12 warns about spuriously.)
class JsonValue {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<JsonValue>;
  using Object = std::vector<std::pair<std::string, JsonValue>>;

  static JsonValue make_number(double v) { JsonValue j; j.kind_ = Kind::Number; j.number_ = v; return j; }
  static JsonValue make_bool(bool v) { JsonValue j; j.kind_ = Kind::Bool; j.number_ = v ? 1 : 0; return j; }
  static JsonValue make_string(std::string v) { JsonValue j; j.kind_ = Kind::String; j.string_ = std::move(v); return j; }
  static JsonValue make_array(Array v) { JsonValue j; j.kind_ = Kind::Array; j.array_ = std::move(v); return j; }
  static JsonValue make_object(Object v) { JsonValue j; j.kind_ = Kind::Object; j.object_ = std::move(v); return j; }

  const JsonValue& at(std::string_view key) const;
  /// True when this is an object with field `key`.
  bool has(std::string_view key) const;
  double as_number() const;
  const std::string& as_string() const;
  const Array& as_array() const;

 private:
  Kind kind_ = Kind::Null;
  double number_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

/// Parses `text`; errors name `source` and the byte offset.
JsonValue parse_json(std::string_view text, const std::string& source);

}  // namespace bench
