// A strict, bounded JSON reader for the dumps mpidist-trace reads.
#include "json_reader.hpp"

#include <cstdlib>

namespace mpidist::trace {
namespace {

// Recursive descent with an explicit depth bound; `pos_` moves past each value read.
class Parser {
 public:
  Parser(std::string_view text, const std::string& source, const JsonLimits& limits)
      : text_(text), source_(source), limits_(limits) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError(source_ + ": invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\n' || peek() == '\r' || peek() == '\t')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (!at_end() && peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(at_end() ? std::string("unexpected end (the file is cut short?), expected '") + c + "'"
                               : std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  Json value(std::size_t depth) {
    if (depth > limits_.max_depth) fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    skip_space();
    if (at_end()) fail("unexpected end (the file is cut short?)");
    const char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json::string(string());
    if (word("true")) return Json::boolean(true);
    if (word("false")) return Json::boolean(false);
    if (word("null")) return Json::null();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(std::string("unexpected character '") + (c >= 0x20 && c < 0x7f ? std::string(1, c) : "?") + "'");
  }

  Json object(std::size_t depth) {
    expect('{');
    Json::Object members;
    if (eat('}')) return Json::object(std::move(members));
    do {
      skip_space();
      std::string key = string();
      expect(':');
      members.emplace_back(std::move(key), value(depth + 1));
    } while (eat(','));
    expect('}');
    return Json::object(std::move(members));
  }

  Json array(std::size_t depth) {
    expect('[');
    Json::Array items;
    if (eat(']')) return Json::array(std::move(items));
    do items.push_back(value(depth + 1));
    while (eat(','));
    expect(']');
    return Json::array(std::move(items));
  }

  unsigned hex4() {
    if (text_.size() - pos_ < 4) fail("short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<unsigned>(h - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  std::string string() {
    if (at_end() || peek() != '"') fail("expected a string");
    ++pos_;
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string (the file is cut short?)");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xd800 && cp < 0xdc00 && text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xdc00 || low >= 0xe000) fail("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("unknown escape");
      }
    }
  }

  Json number() {
    const std::size_t start = pos_;
    const bool negative = eat('-');
    if (at_end() || peek() < '0' || peek() > '9') fail("expected a digit");
    std::uint64_t magnitude = 0;
    bool overflow = false;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      const auto digit = static_cast<std::uint64_t>(peek() - '0');
      if (magnitude > (UINT64_MAX - digit) / 10) overflow = true;
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    bool fraction = false;
    if (!at_end() && peek() == '.') {
      fraction = true;
      ++pos_;
      if (at_end() || peek() < '0' || peek() > '9') fail("expected a digit after '.'");
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      fraction = true;
      ++pos_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      if (at_end() || peek() < '0' || peek() > '9') fail("expected a digit in the exponent");
      while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (!fraction && !overflow) return Json::integer(negative, magnitude);
    const std::string digits(text_.substr(start, pos_ - start));
    return Json::number(std::strtod(digits.c_str(), nullptr));
  }

  std::string_view text_;
  const std::string& source_;
  const JsonLimits& limits_;
  std::size_t pos_ = 0;
};

}  // namespace

const Json* Json::find(std::string_view key) const noexcept {
  if (kind_ != Kind::Object) return nullptr;
  for (const auto& [name, value] : object_)
    if (name == key) return &value;
  return nullptr;
}

Json Json::boolean(bool v) {
  Json j;
  j.kind_ = Kind::Bool;
  j.integer_ = v ? 1 : 0;
  return j;
}
Json Json::integer(bool negative, std::uint64_t magnitude) {
  Json j;
  j.kind_ = Kind::Integer;
  j.negative_ = negative && magnitude != 0;
  j.integer_ = magnitude;
  return j;
}
Json Json::number(double v) {
  Json j;
  j.kind_ = Kind::Number;
  j.number_ = v;
  return j;
}
Json Json::string(std::string v) {
  Json j;
  j.kind_ = Kind::String;
  j.string_ = std::move(v);
  return j;
}
Json Json::array(Array v) {
  Json j;
  j.kind_ = Kind::Array;
  j.array_ = std::move(v);
  return j;
}
Json Json::object(Object v) {
  Json j;
  j.kind_ = Kind::Object;
  j.object_ = std::move(v);
  return j;
}

Json parse_json(std::string_view text, const std::string& source, const JsonLimits& limits) {
  return Parser(text, source, limits).document();
}

}  // namespace mpidist::trace
