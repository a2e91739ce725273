// libFuzzer target: bytes as a received object payload. The first byte picks a frame check or the
// type to decode; the rest goes to what the receive path calls (check_received_frame, decode<T>).
// Anything but an mpidist::Error (another exception, a crash, a sanitizer report, a leak) is a bug.
#include <boost/serialization/library_version_type.hpp>  // list.hpp of Boost 1.74 uses it without including it
#include <boost/serialization/list.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "mpidist/mpidist.hpp"

namespace {

struct Page {
  std::string label;
  char data[4096] = {};
  template <class Archive>
  void serialize(Archive& ar, unsigned int) {
    ar & label;
    ar & boost::serialization::make_array(data, sizeof data);
  }
};

struct Record {
  int id = 0;
  std::optional<std::string> note;
  std::variant<int, double, std::string> value;
  std::tuple<float, std::vector<int>> extra;
  std::map<std::string, std::list<std::string>> tags;
  template <class Archive>
  void serialize(Archive& ar, unsigned int) {
    ar & id & note & value & extra & tags;
  }
};

template <class T>
void decode_as(const std::byte* data, std::size_t size) {
  try {
    (void)mpidist::detail::decode<T>("fuzz", 1, data, size);
  } catch (const mpidist::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size == 0) return 0;
  const auto* data = reinterpret_cast<const std::byte*>(bytes) + 1;
  const std::size_t n = size - 1;
  switch (bytes[0] % 8) {
    case 0:
      if (n >= mpidist::detail::payload_frame_bytes) {
        try {
          (void)mpidist::detail::check_received_frame("fuzz", 1, data);
        } catch (const mpidist::Error&) {
        }
      }
      break;
    case 1: decode_as<std::vector<Page>>(data, n); break;
    case 2: decode_as<std::map<std::string, std::vector<float>>>(data, n); break;
    case 3: decode_as<Record>(data, n); break;
    case 4: decode_as<std::list<std::string>>(data, n); break;
    case 5: decode_as<std::vector<std::vector<double>>>(data, n); break;
    case 6: decode_as<std::vector<float>>(data, n); break;  // raw element bytes
    default: decode_as<std::vector<Record>>(data, n); break;
  }
  return 0;
}
