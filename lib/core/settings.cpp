// Reading the job-wide settings from the environment, and the ranks' agreement on them.
#include "core/settings.hpp"

#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/device_backend.hpp"
#include "core/mpi_check.hpp"
#include "core/outcome.hpp"
#include "core/same_everywhere.hpp"
#include "core/text_collectives.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {
namespace {

constexpr const char* operation = "initialize";

double g_stall_warn_default_for_testing = 0;  // 0: stall_warn_default_seconds

struct Variable {
  const char* name;
  std::string text;  // as this rank has it; "" when unset
};

std::string read(const char* name) {
  const char* text = std::getenv(name);
  return text ? text : "";
}

// MPIDIST_VALIDATE=1|0|auto: nullopt for auto, resolved job-wide below.
std::optional<bool> parse_validate(const std::string& text) {
  if (text == "1" || text == "all" || text == "on") return true;
  if (text == "0" || text == "off") return false;
  if (text.empty() || text == "auto") return std::nullopt;
  throw Error(operation, "MPIDIST_VALIDATE='" + text + "' is not one of 1, 0, auto");
}

std::optional<Backend> parse_backend(const std::string& text) {
  if (text.empty() || text == "auto") return std::nullopt;
  if (text == "mpi") return Backend::Mpi;
  if (text == "nccl") {
    if (!nccl_built()) throw Error(operation, "MPIDIST_BACKEND=nccl but mpidist was built without NCCL");
    return Backend::Nccl;
  }
  throw Error(operation, "MPIDIST_BACKEND='" + text + "' is not one of mpi, nccl, auto");
}

double parse_seconds(const char* name, const std::string& text, double fallback) {
  if (text.empty()) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !(value >= 0.0) || value > 1e9)
    throw Error(operation, std::string(name) + " must be a number of seconds >= 0, got '" + text + "'");
  return value;
}

std::uint32_t parse_entries(const std::string& text) {
  if (text.empty()) return 2000;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || value < 1 || value > 1'000'000)
    throw Error(operation, "MPIDIST_TRACE_ENTRIES must be a whole number from 1 to 1000000, got '" + text + "'");
  return static_cast<std::uint32_t>(value);
}

HostAllReduce parse_host_all_reduce(const std::string& text) {
  if (text.empty() || text == "auto") return HostAllReduce::Auto;
  if (text == "mpi") return HostAllReduce::Mpi;
  if (text == "shm") return HostAllReduce::Shm;
  if (text == "2d") return HostAllReduce::TwoD;
  throw Error(operation, "MPIDIST_HOST_ALLREDUCE='" + text + "' is not one of auto, mpi, shm, 2d");
}

std::size_t parse_fusion_bytes(const std::string& text) {
  if (text.empty()) return default_fusion_bytes;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  // At least one float64, at most 16 GiB: beyond that a "fusion buffer" is a typo.
  if (*end != '\0' || value < 8 || value > (1LL << 34))
    throw Error(operation, "MPIDIST_FUSION_BYTES must be a byte count in [8, 2^34], got '" + text + "'");
  return static_cast<std::size_t>(value);
}

// "MPIDIST_TIMEOUT: rank 0 has '5', rank 1 has (unset)" for every variable that differs, from
// `joined`: every variable's text, one a line, as each rank holds it.
std::string describe_disagreement(MPI_Comm comm, const std::vector<Variable>& mine, const std::string& joined) {
  const auto all = all_gather_text(comm, joined);
  std::string text = "ranks disagree on job-wide settings (set them alike on every rank):";
  for (std::size_t i = 0; i < mine.size(); ++i) {
    std::vector<std::string> values;
    bool differs = false;
    for (const auto& rank_text : all) {
      std::size_t at = 0;
      for (std::size_t k = 0; k < i; ++k) at = rank_text.find('\n', at) + 1;
      values.push_back(rank_text.substr(at, rank_text.find('\n', at) - at));
      differs |= values.back() != values.front();
    }
    if (!differs) continue;
    text += std::string(" ") + mine[i].name + ":";
    for (std::size_t r = 0; r < values.size(); ++r)
      text += (r ? ", rank " : " rank ") + std::to_string(r) + " has " + (values[r].empty() ? "(unset)" : "'" + values[r] + "'");
    text += ";";
  }
  text.pop_back();
  return text;
}

}  // namespace

Settings agree_on_settings(MPI_Comm comm, bool mpi_single_copy_here) {
  const std::vector<Variable> mine{{"MPIDIST_VALIDATE", read("MPIDIST_VALIDATE")},
                                   {"MPIDIST_BACKEND", read("MPIDIST_BACKEND")},
                                   {"MPIDIST_TIMEOUT", read("MPIDIST_TIMEOUT")},
                                   {"MPIDIST_STALL_WARN", read("MPIDIST_STALL_WARN")},
                                   {"MPIDIST_TRACE_ENTRIES", read("MPIDIST_TRACE_ENTRIES")},
                                   {"MPIDIST_TRACE_DIR", read("MPIDIST_TRACE_DIR")},
                                   {"MPIDIST_HOST_ALLREDUCE", read("MPIDIST_HOST_ALLREDUCE")},
                                   {"MPIDIST_FUSION_BYTES", read("MPIDIST_FUSION_BYTES")}};
  Settings settings;
  std::optional<bool> validate;
  agree_on_outcome(comm, operation, capture([&] {
                     validate = parse_validate(mine[0].text);
                     settings.backend = parse_backend(mine[1].text);
                     settings.timeout_seconds = parse_seconds("MPIDIST_TIMEOUT", mine[2].text, default_timeout_seconds);
                     settings.stall_warn_seconds =
                         parse_seconds("MPIDIST_STALL_WARN", mine[3].text, default_stall_warn_seconds());
                     settings.trace_entries = parse_entries(mine[4].text);
                     settings.trace_dir = mine[5].text;
                     settings.host_all_reduce = parse_host_all_reduce(mine[6].text);
                     settings.fusion_bytes = parse_fusion_bytes(mine[7].text);
                   }));
  std::string joined;
  for (const auto& v : mine) joined += v.text + '\n';
  if (!extremes_across_ranks(comm, fnv1a(joined)).same()) throw Error(operation, describe_disagreement(comm, mine, joined));
  // Auto: where any rank has a GPU, check the calls on device memory. A mismatch would hang NCCL,
  // and the check is cheap beside a kernel launch. Host calls keep MPI's own contract, as in a
  // CPU-only job: on a 16-core H200 node the check made a 4 B host all_reduce 4.8x slower than
  // MPI_Allreduce (4.4 against 0.9 us). Decided for the whole job, and per call from the memory
  // its ranks pass: ranks that disagree on checking would hang each other.
  // The same round carries the MPI's single copy: any rank's yes keeps the segment's 4 MiB handover.
  int any[2] = {cuda_device_count() > 0 ? 1 : 0, mpi_single_copy_here ? 1 : 0};
  MPIDIST_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, any, 2, MPI_INT, MPI_MAX, comm));
  settings.any_device = any[0] != 0;
  settings.mpi_single_copy = any[1] != 0;
  if (validate) settings.validate = *validate;
  else settings.validate_device_calls = settings.any_device;
  return settings;
}

double default_stall_warn_seconds() noexcept {
  return g_stall_warn_default_for_testing > 0 ? g_stall_warn_default_for_testing : stall_warn_default_seconds;
}

void set_default_stall_warn_seconds_for_testing(double seconds) noexcept {
  g_stall_warn_default_for_testing = seconds > 0 ? seconds : 0;
}

const Settings& settings(const char* operation_name) { return context(operation_name).settings; }

}  // namespace mpidist::detail
