// The table, JSON and CSV that mpidist-bench writes, and --compare.
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "core/json.hpp"  // lib/core/json.hpp: the library's JSON string quoting
#include "json_value.hpp"

namespace bench {
namespace {

// printf into a std::string (g++ 12 has no <format>).
template <class... A>
std::string fmt(const char* format, A... args) {
  char text[256];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

std::string json_quote(std::string_view text) { return mpidist::detail::json_string(text); }

std::string us(double value) { return value < 1e4 ? fmt("%.2f", value) : fmt("%.0f", value); }

}  // namespace

double Result::raw_time_us() const {
  if (raw_nccl) return raw_nccl->median_us;
  return raw_mpi ? raw_mpi->median_us : 0.0;
}

double Result::ratio() const {
  const double raw = raw_time_us();
  return raw > 0 ? mpidist.median_us / raw : 0.0;
}

void print_header(std::ostream& out, const RunInfo& info, const Options& o, bool device) {
  out << "# mpidist-bench " << info.op << ": " << info.ranks << " ranks on " << info.nodes
      << (info.nodes == 1 ? " node" : " nodes") << ", backend " << info.backend << " ("
      << (device ? "device buffers" : "host buffers") << "), " << info.mpi_library << "\n"
      << "# " << o.iters << " iterations (+" << o.warmup << " warm-up) per size, "
      << (o.in_place ? "in place" : "out of place") << ", check " << (o.check ? "on" : "off")
      << (o.threads == "multiple" ? ", MPI_THREAD_MULTIPLE" : "")
      << "; time = median of the slowest rank, raw " << (device ? "NCCL" : "MPI") << " interleaved\n";
  if (info.memcpy_gbps > 0)
    out << fmt("# memcpy reference: %.2f GB/s copied by 2 threads on rank 0 in this run (%.2f GB/s read + write); "
               "busbw/memcpy is the fraction of it\n", info.memcpy_gbps, 2 * info.memcpy_gbps);
  if (o.many > 1 && info.op == "all_reduce_many")
    out << "# " << o.many << " buffers per call (--many); size and count are the sum over them\n";
  out << "#\n"
      << fmt("# %12s %12s %8s %6s %4s %10s %11s %11s %7s %10s %10s %10s %7s %9s", "size", "count", "type",
             "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", "min(us)", "max(us)",
             device ? "nccl(us)" : "mpi(us)", "ratio", "added(us)")
      << (info.memcpy_gbps > 0 ? " busbw/memcpy\n" : "\n");
  out.flush();
}

void print_group(std::ostream& out, int group, int ngroups) {
  out << "# group " << group << ": " << ngroups << (ngroups == 1 ? " group" : " groups") << " of " << group
      << (group == 1 ? " rank" : " ranks") << " (mpidist::new_subgroups(" << group
      << ")), raw side on the same split, busbw with n = " << group << "\n";
  out.flush();
}

void print_row(std::ostream& out, const OpHooks& op, const RunInfo& info, const Options& o, const Result& r) {
  const double raw = r.raw_time_us();
  out << fmt("  %12zu %12zu %8s %6s %4d %10s %11.3f %11.3f %7zu %10s %10s %10s %7.3f %+9.2f", r.bytes, r.count,
             info.dtype.c_str(), info.redop.c_str(), op.rooted ? o.root : -1, us(r.mpidist.median_us).c_str(),
             r.algbw, r.busbw, r.wrong, us(r.mpidist.min_us).c_str(), us(r.mpidist.max_us).c_str(),
             us(raw).c_str(), r.ratio(), r.mpidist.median_us - raw)
      << (info.memcpy_gbps > 0 ? fmt(" %12.3f\n", r.busbw / info.memcpy_gbps) : std::string("\n"));
  out.flush();  // one line per size as it completes: the progress of a long sweep
}

void print_footer(std::ostream& out, const OpHooks& op, const std::vector<Result>& results, std::size_t raw_wrong) {
  std::size_t wrong = 0;
  double busbw = 0;
  std::vector<double> ratios;
  for (const Result& r : results) {
    wrong += r.wrong;
    busbw += r.busbw;
    if (r.ratio() > 0) ratios.push_back(r.ratio());
  }
  std::sort(ratios.begin(), ratios.end());
  out << "# Wrong values       : " << wrong << (wrong ? " FAILED" : " OK") << "\n";
  if (raw_wrong) out << "# Raw side wrong     : " << raw_wrong << " (a benchmark bug: please report)\n";
  if (op.has_data) out << fmt("# Avg bus bandwidth  : %.3f GB/s\n", results.empty() ? 0.0 : busbw / static_cast<double>(results.size()));
  if (!ratios.empty()) out << fmt("# Median ratio       : %.3f (mpidist / raw)\n", ratios[ratios.size() / 2]);
  out << "#\n";
  out.flush();
}

std::string to_json(const RunInfo& info, const std::vector<Result>& results) {
  std::ostringstream j;
  j << "{\"op\": " << json_quote(info.op) << ", \"ranks\": " << info.ranks << ", \"nodes\": " << info.nodes
    << ", \"backend\": " << json_quote(info.backend) << ", \"dtype\": " << json_quote(info.dtype)
    << ", \"redop\": " << json_quote(info.redop) << ", \"mpi_library\": " << json_quote(info.mpi_library)
    << ", \"date\": " << json_quote(info.date);
  // Host tensor ops: the memcpy reference of this run, for bounds computed from the JSON alone.
  if (info.memcpy_gbps > 0) j << ", \"memcpy_gbps\": " << fmt("%.4f", info.memcpy_gbps);
  j << ",\n \"results\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    j << (i ? ",\n  " : "\n  ")
      << fmt("{\"group\": %d, \"bytes\": %zu, \"count\": %zu, \"time_us\": %.4f, \"time_min_us\": %.4f, "
             "\"time_max_us\": %.4f, ",
             r.group, r.bytes, r.count, r.mpidist.median_us, r.mpidist.min_us, r.mpidist.max_us)
      << fmt("\"algbw\": %.6f, \"busbw\": %.6f, \"wrong\": %zu, \"raw_time_us\": %.4f, \"ratio\": %.5f}", r.algbw,
             r.busbw, r.wrong, r.raw_time_us(), r.ratio());
  }
  j << "\n]}\n";
  return j.str();
}

std::string to_csv(const RunInfo& info, const std::vector<Result>& results) {
  std::ostringstream c;
  c << "op,ranks,nodes,backend,dtype,redop,group,bytes,count,time_us,time_min_us,time_max_us,algbw,busbw,wrong,"
       "raw_time_us,ratio\n";
  for (const Result& r : results)
    c << info.op << ',' << info.ranks << ',' << info.nodes << ',' << info.backend << ',' << info.dtype << ','
      << info.redop << ',' << r.group << ','
      << fmt("%zu,%zu,%.4f,%.4f,%.4f,%.6f,%.6f,%zu,%.4f,%.5f\n", r.bytes, r.count, r.mpidist.median_us,
             r.mpidist.min_us, r.mpidist.max_us, r.algbw, r.busbw, r.wrong, r.raw_time_us(), r.ratio());
  return c.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  if (!file) throw std::runtime_error("cannot write '" + path + "'");
}

void print_compare(std::ostream& out, const std::string& path, const RunInfo& info, const std::vector<Result>& results) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("--compare: cannot open '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  const JsonValue old = parse_json(text.str(), path);
  for (const char* key : {"op", "dtype", "redop", "backend"}) {
    const std::string was = old.at(key).as_string(), now = key == std::string("op") ? info.op
                                                     : key == std::string("dtype") ? info.dtype
                                                     : key == std::string("redop") ? info.redop : info.backend;
    if (was != now) out << "# note: " << path << " has " << key << " '" << was << "', this run '" << now << "'\n";
  }
  if (old.at("ranks").as_number() != info.ranks)
    out << "# note: " << path << " ran on " << old.at("ranks").as_number() << " ranks, this run on " << info.ranks << "\n";
  out << "# compare with " << path << " (" << old.at("date").as_string() << "): change = new/old - 1\n"
      << fmt("# %12s %12s %12s %8s %11s %11s %8s\n", "size", "old(us)", "new(us)", "time", "old busbw", "new busbw",
             "busbw");
  // Files from before --group have no "group" field: their rows ran in the world.
  const double old_ranks = old.at("ranks").as_number();
  const auto group_of = [&](const JsonValue& row) { return row.has("group") ? row.at("group").as_number() : old_ranks; };
  int shown_group = info.ranks;  // a --group run's sizes repeat per group: open each section
  for (const Result& r : results) {
    if (r.group != shown_group) out << "# group " << (shown_group = r.group) << "\n";
    for (const JsonValue& row : old.at("results").as_array()) {
      if (static_cast<std::size_t>(row.at("bytes").as_number()) != r.bytes || group_of(row) != r.group) continue;
      const double t0 = row.at("time_us").as_number(), b0 = row.at("busbw").as_number();
      out << fmt("  %12zu %12s %12s %+7.1f%% %11.3f %11.3f %+7.1f%%\n", r.bytes, us(t0).c_str(),
                 us(r.mpidist.median_us).c_str(), t0 > 0 ? (r.mpidist.median_us / t0 - 1) * 100 : 0.0, b0, r.busbw,
                 b0 > 0 ? (r.busbw / b0 - 1) * 100 : 0.0);
      break;
    }
  }
  out.flush();
}

}  // namespace bench
