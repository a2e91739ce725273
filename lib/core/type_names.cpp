// The registry of object types by fingerprint, and the readable form of a typeid name.
#include "mpidist/detail/type_names.hpp"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace mpidist::detail {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::uint64_t, const char*> names;  // typeid names live as long as the program
};

// A function-local static: registrations run during the static initialization of programs
// that include objects.hpp, in any order with this library's own.
Registry& registry() {
  static Registry r;
  return r;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// ", std::allocator<X> >" closing a container whose element is X: the default, dropped.
void drop_default_allocators(std::string& text) {
  const std::string marker = ", std::allocator<";
  for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
    std::size_t depth = 1, end = at + marker.size();
    for (; end < text.size() && depth > 0; ++end) depth += text[end] == '<' ? 1 : text[end] == '>' ? -1 : 0;
    text.erase(at, end - at);
  }
}

}  // namespace

std::uint64_t register_object_type(const char* mangled) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: the fingerprint the flight recorder keeps too
  for (const char* p = mangled; *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
  try {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    r.names.emplace(h, mangled);
  } catch (...) {
    // Out of memory at start-up: the type is still fingerprinted, only not named in errors.
  }
  return h;
}

std::string object_type_name(std::uint64_t tag) {
  const char* mangled = nullptr;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    const auto found = r.names.find(tag);
    if (found != r.names.end()) mangled = found->second;
  }
  if (mangled != nullptr) return readable_type_name(mangled);
  char text[96];
  std::snprintf(text, sizeof text, "a type unknown to this rank (fingerprint 0x%016llx)",
                static_cast<unsigned long long>(tag));
  return text;
}

std::string readable_type_name(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  if (status != 0 || !text) return mangled;
  std::string out = text.get();
  replace_all(out, "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string");
  replace_all(out, "std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "std::string");
  replace_all(out, "std::__cxx11::", "std::");
  drop_default_allocators(out);
  replace_all(out, " >", ">");  // the demangler's C++03 spacing: vector<vector<float>>
  return out;
}

}  // namespace mpidist::detail
