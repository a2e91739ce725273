// The serializer maps of the object collectives' archives, and their error messages.
#include <boost/archive/impl/archive_serializer_map.ipp>
#include <string>

#include "mpidist/detail/object_archive.hpp"
#include "mpidist/detail/object_codec.hpp"
#include "mpidist/detail/type_names.hpp"
#include "mpidist/error.hpp"

// Boost keeps one map of (de)serializers per archive type; like its own archives, ours need the
// map instantiated once, in the library.
template class boost::archive::detail::archive_serializer_map<mpidist::detail::OutputArchive>;
template class boost::archive::detail::archive_serializer_map<mpidist::detail::InputArchive>;

namespace mpidist::detail {

void throw_corrupt_payload(const char* what, std::size_t wanted, std::size_t left) {
  throw Error("deserialize", std::string(what) + " announces " + std::to_string(wanted) + " but only " +
                                 std::to_string(left) + " bytes are left");
}

void throw_bad_value(const char* operation, int rank, const std::type_info& type, const char* why) {
  throw Error(operation, "cannot deserialize the value from rank " + std::to_string(rank) + " as " +
                             readable_type_name(type.name()) + ": " + why);
}

void rethrow_as_bad_value(const char* operation, int rank, const std::type_info& type) {
  try {
    throw;
  } catch (const Error& e) {
    if (e.operation() == operation) throw;  // already says what went wrong
  } catch (...) {
  }
  const std::string why = describe_exception(std::current_exception());
  throw_bad_value(operation, rank, type, why.c_str());
}

void throw_local_failure(const char* operation, int rank, const std::exception_ptr& failure) {
  throw Error(operation, "rank " + std::to_string(rank) + " failed: " + describe_exception(failure));
}

}  // namespace mpidist::detail
