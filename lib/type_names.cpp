// Type names as a C++ programmer writes them, for Errors and reports: demangled, with the standard
// library's default template arguments left out ("std::map<std::string, std::vector<double>>"
// rather than "St3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt6vectorIdSaIdEE...").
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "mpidist/detail/object_transport.hpp"

namespace mpidist::detail {
namespace {

// Removes every ", <prefix>...>" template argument (balanced), e.g. ", std::allocator<double> ".
void drop_argument(std::string& name, const std::string& prefix) {
  for (std::size_t at = name.find(prefix); at != std::string::npos; at = name.find(prefix, at)) {
    std::size_t end = at + prefix.size();
    for (int depth = 1; end < name.size() && depth > 0; ++end) depth += name[end] == '<' ? 1 : name[end] == '>' ? -1 : 0;
    while (end < name.size() && name[end] == ' ') ++end;  // "> >" as older demanglers space it
    name.erase(at, end - at);
  }
}

void replace_all(std::string& name, const std::string& from, const std::string& to) {
  for (std::size_t at = name.find(from); at != std::string::npos; at = name.find(from, at + to.size()))
    name.replace(at, from.size(), to);
}

}  // namespace

std::string readable_type_name(const char* mangled) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> plain(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  if (status != 0 || !plain) return mangled;
  std::string name = plain.get();
  replace_all(name, "std::__cxx11::", "std::");
  for (const char* def : {", std::char_traits<", ", std::allocator<", ", std::less<", ", std::hash<", ", std::equal_to<"})
    drop_argument(name, def);
  replace_all(name, "std::basic_string<char>", "std::string");
  replace_all(name, "> >", ">>");
  return name;
}

}  // namespace mpidist::detail
