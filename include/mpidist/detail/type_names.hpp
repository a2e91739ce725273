// Names of the C++ types the object collectives carry, for errors that a person reads. A frame
// carries only its type's fingerprint (8 bytes); the receiver names the sender's type from a
// registry every rank of one program fills alike at start-up. Internal; lib/core/type_names.cpp.
#pragma once

#include <cstdint>
#include <string>

namespace mpidist::detail {

/// The fingerprint of the type whose typeid name is `mangled` (FNV-1a of the name), recorded so
/// that object_type_name() can name it later. Thread-safe; cheap enough for static initialization.
std::uint64_t register_object_type(const char* mangled) noexcept;

/// The registered type of fingerprint `tag`, readable ("std::string", "std::vector<float>"), or
/// "a type unknown to this rank (fingerprint 0x...)" when this program never used it.
std::string object_type_name(std::uint64_t tag);

/// `mangled` (a typeid name) demangled, with the standard library's aliases under their usual
/// names (std::string, no default allocators); as given when it does not demangle.
std::string readable_type_name(const char* mangled);

}  // namespace mpidist::detail
