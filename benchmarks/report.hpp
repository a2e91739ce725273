// What mpidist-bench writes: the nccl-tests table (header, a row per size, footer), the JSON
// and CSV files, and the comparison against an earlier JSON run.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "bench.hpp"

namespace bench {

void print_header(std::ostream& out, const RunInfo& info, const Options& o, bool device);
/// With --group: the line that opens one group size's rows.
void print_group(std::ostream& out, int group, int ngroups);
void print_row(std::ostream& out, const OpHooks& op, const RunInfo& info, const Options& o, const Result& r);
/// Average busbw, wrong values (with OK/FAILED) and the median ratio.
void print_footer(std::ostream& out, const OpHooks& op, const std::vector<Result>& results, std::size_t raw_wrong);

/// The run as one JSON object (the field names are a contract: cluster scripts read them).
std::string to_json(const RunInfo& info, const std::vector<Result>& results);
/// The results as CSV, one row per size, the run's fields repeated on every row.
std::string to_csv(const RunInfo& info, const std::vector<Result>& results);
/// Writes `text` to `path`; throws std::runtime_error naming the path on failure.
void write_file(const std::string& path, const std::string& text);

/// Reads an earlier --json file and prints, per size (and group) present in both runs, old and new time
/// and busbw and the change. Throws std::runtime_error naming the file on a bad one.
void print_compare(std::ostream& out, const std::string& path, const RunInfo& info, const std::vector<Result>& results);

}  // namespace bench
