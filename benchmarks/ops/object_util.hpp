// Object collectives move a std::vector<T> of the -d element type: the trivially copyable fast
// path of <mpidist/objects.hpp> (size first, then the bytes). The raw MPI side is what a user
// writes by hand for the same job: the size in one message, then the bytes into a buffer the
// caller keeps. mpidist returns a fresh vector each call, as its value API must.
#pragma once

#include <any>
#include <vector>

#include "op_util.hpp"

#if __has_include("mpidist/objects.hpp")
// objects.hpp's archive (detail/object_archive.hpp) instantiates std::string serialization but does
// not include its Boost header (yet); including it first keeps this file building either way.
#include <boost/serialization/string.hpp>

#include "mpidist/objects.hpp"
#define BENCH_HAVE_OBJECTS 1
#else
#define BENCH_HAVE_OBJECTS 0
#endif

namespace bench::ops {

/// The vectors an object op keeps between calls, typed by the run's dtype (std::any keeps the
/// per-op files free of templates).
struct ObjectState {
  std::any input;      ///< std::vector<T>: this rank's value
  std::any result;     ///< mpidist's last result
  std::any raw;        ///< std::vector<T>: raw MPI's receive buffer, reused across calls
};

template <class T>
std::vector<T>& as_vector(std::any& slot) {
  if (!slot.has_value() || slot.type() != typeid(std::vector<T>)) slot = std::vector<T>();
  return *std::any_cast<std::vector<T>>(&slot);
}

/// Throws when the library was built before <mpidist/objects.hpp> existed.
inline void require_objects([[maybe_unused]] const char* op) {
#if !BENCH_HAVE_OBJECTS
  throw std::invalid_argument(std::string(op) + ": this build has no <mpidist/objects.hpp>");
#endif
}

}  // namespace bench::ops
