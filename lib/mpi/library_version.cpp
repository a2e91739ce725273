// The MPI library's name and version.
#include "mpi/library_version.hpp"

#include <mpi.h>

#include <array>
#include <sstream>

namespace mpidist::detail::mpi {
namespace {

// The value of a "<name> <key>:\t<value>" line of MPICH's report ("MPICH Version:\t4.0.2"),
// or "" when there is none.
std::string field(const std::string& report, const std::string& key) {
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(key + ":");
    if (colon == std::string::npos) continue;
    const auto value = line.find_first_not_of(" \t", colon + key.size() + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

}  // namespace

std::string library_version() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
  int length = 0;
  MPI_Get_library_version(text.data(), &length);
  const std::string report(text.data(), static_cast<std::size_t>(length));
  // MPICH and its derivatives report "MPICH Version:", "MPICH Device:", ... one per line; Open
  // MPI one line "Open MPI v4.1.4, package: ..."; others usually a sentence on the first line.
  const auto first = report.substr(0, report.find('\n'));
  const auto name_end = first.find(" Version:");
  if (name_end != std::string::npos) {
    const std::string name = first.substr(0, name_end);
    const std::string device = field(report, name + " Device");
    return name + " " + field(report, name + " Version") + (device.empty() ? "" : " (" + device + ")");
  }
  return first.substr(0, first.find(','));
}

}  // namespace mpidist::detail::mpi
