// A small JSON reader for --compare.
#include "json_value.hpp"

#include <cstdlib>
#include <stdexcept>

namespace bench {
namespace {

// Recursive descent over the text; `pos` moves past each value read.
class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  JsonValue document() {
    JsonValue v = value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(source_ + ": invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) { ++pos_; return true; }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  JsonValue value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return JsonValue::make_string(string());
    if (word("true")) return JsonValue::make_bool(true);
    if (word("false")) return JsonValue::make_bool(false);
    if (word("null")) return JsonValue();
    return JsonValue::make_number(number());
  }

  JsonValue object() {
    expect('{');
    JsonValue::Object members;
    if (eat('}')) return JsonValue::make_object(std::move(members));
    do {
      skip_space();
      std::string key = string();
      expect(':');
      members.emplace_back(std::move(key), value());
    } while (eat(','));
    expect('}');
    return JsonValue::make_object(std::move(members));
  }

  JsonValue array() {
    expect('[');
    JsonValue::Array items;
    if (eat(']')) return JsonValue::make_array(std::move(items));
    do items.push_back(value());
    while (eat(','));
    expect(']');
    return JsonValue::make_array(std::move(items));
  }

  std::string string() {
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string");
    std::string out;
    for (++pos_; pos_ < text_.size() && text_[pos_] != '"'; ++pos_) {
      char c = text_[pos_];
      if (c == '\\' && ++pos_ < text_.size()) {
        c = text_[pos_];
        if (c == 'n') c = '\n';
        else if (c == 't') c = '\t';
        else if (c == 'u') {  // our files only escape control characters; keep the code point if ASCII
          if (pos_ + 4 >= text_.size()) fail("short \\u escape");
          c = static_cast<char>(std::strtol(std::string(text_.substr(pos_ + 1, 4)).c_str(), nullptr, 16));
          pos_ += 4;
        }
      }
      out += c;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  double number() {
    const std::string rest(text_.substr(pos_, 64));
    char* end = nullptr;
    const double v = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) fail("expected a value");
    pos_ += static_cast<std::size_t>(end - rest.c_str());
    return v;
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

}  // namespace

const JsonValue& JsonValue::at(std::string_view key) const {
  if (kind_ != Kind::Object) throw std::runtime_error("JSON: looked up '" + std::string(key) + "' in a non-object");
  // Last one wins, as in most readers; files are small, a linear search is enough.
  for (auto it = object_.rbegin(); it != object_.rend(); ++it)
    if (it->first == key) return it->second;
  throw std::runtime_error("JSON: missing field '" + std::string(key) + "'");
}

bool JsonValue::has(std::string_view key) const {
  if (kind_ != Kind::Object) return false;
  for (const auto& field : object_)
    if (field.first == key) return true;
  return false;
}

double JsonValue::as_number() const {
  if (kind_ != Kind::Number) throw std::runtime_error("JSON: expected a number");
  return number_;
}

const std::string& JsonValue::as_string() const {
  if (kind_ != Kind::String) throw std::runtime_error("JSON: expected a string");
  return string_;
}

const JsonValue::Array& JsonValue::as_array() const {
  if (kind_ != Kind::Array) throw std::runtime_error("JSON: expected an array");
  return array_;
}

JsonValue parse_json(std::string_view text, const std::string& source) { return Parser(text, source).document(); }

}  // namespace bench
