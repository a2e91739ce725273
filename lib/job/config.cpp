// show_config / job_config: what every rank runs on, gathered into one table.
#include "mpidist/config.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <ostream>
#include <sstream>

#include "core/context.hpp"
#include "core/device_info.hpp"
#include "core/group.hpp"
#include "core/json.hpp"
#include "core/text_collectives.hpp"
#include "mpi/library_version.hpp"

namespace mpidist {
namespace {

// "0-3,8": the CPU set as ranges, the way taskset and hwloc print it.
std::string cpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "unknown";
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    text += (text.empty() ? "" : ",") + std::to_string(cpu) + (last > cpu ? "-" + std::to_string(last) : "");
    cpu = last;
  }
  return text;
}

// What the non-blocking collectives progress on at this job's MPI thread level (README,
// "Non-blocking collectives and gradient buckets").
std::string async_progress() {
  const auto* ctx = detail::context_if_initialized();
  if (ctx == nullptr) return "";
  if (ctx->thread_level == MPI_THREAD_MULTIPLE)
    return "async: ThreadLevel::Multiple: every host step of a non-blocking collective progresses on its "
           "communicator's thread while the caller computes";
  std::string text = "async: ThreadLevel::" +
                     std::string(ctx->thread_level == MPI_THREAD_SERIALIZED ? "Serialized"
                                 : ctx->thread_level == MPI_THREAD_FUNNELED ? "Funneled"
                                                                             : "Single") +
                     ": host collectives within a node progress on the communicator's thread; steps that need MPI";
  // Past 4 MiB a rank they take MPI only where MPI moves large messages in one copy.
  const std::string uneven = ctx->settings.mpi_single_copy
                                 ? "all_to_all with split counts, all_to_all and all_gather_v past 4 MiB a rank"
                                 : "all_to_all with split counts";
  text += ctx->topology.num_nodes > 1 ? " (" + uneven + ", and this job's collectives across its " +
                                            std::to_string(ctx->topology.num_nodes) + " nodes)"
                                      : " (" + uneven + "; across nodes, none in this one-node job)";
  return text + " run at issue on the caller's thread (ThreadLevel::Multiple runs them on the thread)";
}

// Whether the job's ranks share cores (Context::cores_shared_somewhere), and hosts on one machine
// its CPUs (Context::hosts_share_cores), which change how waits spin and auto's paths across hosts.
std::string cores_line() {
  const auto* ctx = detail::context_if_initialized();
  if (ctx == nullptr) return "";
  const std::string here = "this machine runs " + std::to_string(ctx->machine_ranks) + " of the job's ranks on " +
                           std::to_string(ctx->machine_cpus) + " CPUs";
  if (!ctx->cores_shared_somewhere) return "cores: enough for every rank (" + here + ")";
  return "cores: shared (" + here +
         (ctx->machine_ranks > ctx->machine_cpus ? "" : "; another machine runs more ranks than it has CPUs") +
         (ctx->hosts_share_cores ? "; hosts on one machine share its CPUs" : "") + "): waits yield the CPU, and across hosts " +
         (ctx->hosts_share_cores ? "auto starts its 2D paths later" : "auto takes the hosts' leaders more often") +
         " (docs/shared-memory.md)";
}

// Reports cross the wire as fields separated by a unit separator, which no field contains.
constexpr char field_separator = '\x1f';

std::string encode(const RankReport& r) {
  std::ostringstream out;
  for (const auto& field : {std::to_string(r.rank), std::to_string(r.local_rank), std::to_string(r.node_rank),
                            r.hostname, std::to_string(r.pid), r.cpu_affinity, r.cuda_device, r.mpi_library,
                            r.cuda_aware_mpi, r.nccl_version, std::to_string(r.simulated_ranks_per_node)})
    out << field << field_separator;
  return out.str();
}

RankReport decode(const std::string& text) {
  std::vector<std::string> f;
  std::istringstream in(text);
  for (std::string field; std::getline(in, field, field_separator);) f.push_back(field);
  f.resize(11);
  return {std::stoi(f[0]), std::stoi(f[1]), std::stoi(f[2]), f[3], std::stol(f[4]), f[5], f[6], f[7], f[8], f[9],
          std::stoi(f[10])};
}

void write_table(std::ostream& out, const std::vector<RankReport>& reports) {
  const std::vector<std::string> header{"rank", "local", "node", "host", "pid", "cpus", "cuda device",
                                        "cuda-aware mpi", "nccl", "mpi library"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : reports)
    rows.push_back({std::to_string(r.rank), std::to_string(r.local_rank),
                    std::to_string(r.node_rank) + (r.simulated_ranks_per_node > 0 ? " (sim)" : ""), r.hostname,
                    std::to_string(r.pid), r.cpu_affinity, r.cuda_device, r.cuda_aware_mpi, r.nccl_version,
                    r.mpi_library});
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  // Numbers right-aligned, text left-aligned; the last column is not padded.
  const auto write_row = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool numeric = c <= 2 || c == 4;
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c + 1 == row.size()) out << row[c];
      else out << (numeric ? pad + row[c] : row[c] + pad) << "  ";
    }
    out << '\n';
  };
  write_row(header);
  for (const auto& row : rows) write_row(row);
  // Every row shows the one host: say why its ranks sit on several "nodes".
  if (!reports.empty() && reports.front().simulated_ranks_per_node > 0)
    out << "(sim): nodes simulated on one host by MPIDIST_RANKS_PER_NODE=" << reports.front().simulated_ranks_per_node
        << ", for testing multi-node logic\n";
  out << async_progress() << "\n";
  out << cores_line() << "\n";
}

void write_json(std::ostream& out, const std::vector<RankReport>& reports) {
  out << "[\n";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    out << "  {\"rank\": " << r.rank << ", \"local_rank\": " << r.local_rank << ", \"node_rank\": " << r.node_rank
        << ", \"hostname\": " << detail::json_string(r.hostname) << ", \"pid\": " << r.pid
        << ", \"cpu_affinity\": " << detail::json_string(r.cpu_affinity)
        << ", \"cuda_device\": " << detail::json_string(r.cuda_device)
        << ", \"mpi_library\": " << detail::json_string(r.mpi_library)
        << ", \"cuda_aware_mpi\": " << detail::json_string(r.cuda_aware_mpi)
        << ", \"nccl_version\": " << detail::json_string(r.nccl_version)
        << ", \"simulated_ranks_per_node\": " << r.simulated_ranks_per_node << "}" << (i + 1 < reports.size() ? "," : "")
        << "\n";
  }
  out << "]\n";
}

}  // namespace

RankReport local_report() {
  const auto& t = detail::context("local_report").topology;
  return {t.rank,
          t.local_rank,
          t.node_rank,
          t.hostname,
          static_cast<long>(getpid()),
          cpu_affinity(),
          detail::describe_cuda_device(t.local_rank),
          detail::mpi::library_version(),
          detail::cuda_aware_mpi(),
          detail::nccl_version(),
          t.simulated_ranks_per_node};
}

std::vector<RankReport> job_config() { return job_config(world()); }

std::vector<RankReport> job_config(const Communicator& comm) {
  auto& group = detail::group_of(comm, "job_config");
  std::vector<RankReport> reports;
  for (const auto& text : detail::all_gather_text(group.control, encode(local_report())))
    reports.push_back(decode(text));
  return reports;
}

void show_config(std::ostream& out, ConfigFormat format) { show_config(world(), out, format); }
void show_config(ConfigFormat format) { show_config(world(), std::cout, format); }
void show_config(const Communicator& comm, ConfigFormat format) { show_config(comm, std::cout, format); }

void show_config(const Communicator& comm, std::ostream& out, ConfigFormat format) {
  const auto reports = job_config(comm);
  if (!comm.is_main_process()) return;
  if (format == ConfigFormat::Json) write_json(out, reports);
  else write_table(out, reports);
  out.flush();
}

}  // namespace mpidist
