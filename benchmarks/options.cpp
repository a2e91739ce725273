// Command line of mpidist-bench: nccl-tests' flags (-b -e -f -n -w -c -o -d -r) plus the
// backend, in-place, group and output flags.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>

#include "bench.hpp"
#include "mpidist/error.hpp"

namespace bench {
namespace {

// The value of flag argv[i], advancing i; "--json=FILE" and "-b8" spellings are accepted too.
std::string flag_value(int argc, char** argv, int& i, std::string_view flag, std::string_view attached) {
  if (!attached.empty()) return std::string(attached);
  if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
  return argv[++i];
}

long parse_int(std::string_view flag, const std::string& text, long min) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < min)
    throw std::invalid_argument(std::string(flag) + ": '" + text + "' is not an integer >= " + std::to_string(min));
  return value;
}

// Applies one flag with its value; false when `flag` is not one that takes a value.
bool apply_valued(Options& o, std::string_view flag, const std::string& v) {
  if (flag == "-b" || flag == "--minbytes") o.min_bytes = parse_size(v);
  else if (flag == "-e" || flag == "--maxbytes") o.max_bytes = parse_size(v);
  else if (flag == "-f" || flag == "--stepfactor") {
    std::size_t used = 0;
    try { o.factor = std::stod(v, &used); } catch (const std::exception&) { used = 0; }
    if (used != v.size() || !(o.factor > 1.0)) throw std::invalid_argument("-f: '" + v + "' is not a number > 1");
  } else if (flag == "-n" || flag == "--iters") o.iters = static_cast<int>(parse_int(flag, v, 1));
  else if (flag == "-w" || flag == "--warmup_iters") o.warmup = static_cast<int>(parse_int(flag, v, 0));
  else if (flag == "-c" || flag == "--check") o.check = parse_int(flag, v, 0) != 0;
  else if (flag == "-r" || flag == "--root") o.root = static_cast<int>(parse_int(flag, v, 0));
  else if (flag == "--many") o.many = static_cast<int>(parse_int(flag, v, 1));
  else if (flag == "-o" || flag == "--op") {
    // nccl-tests also offers "all", which would multiply the table; one op per run here.
    try { o.redop = mpidist::reduce_op_from_string(v); } catch (const mpidist::Error& e) { throw std::invalid_argument("-o: " + e.detail()); }
    if (o.redop == mpidist::ReduceOp::And || o.redop == mpidist::ReduceOp::Or)
      throw std::invalid_argument("-o: '" + v + "' is for object reductions; tensor collectives take sum, prod, min, max, avg");
    using mpidist::ReduceOp;
    if (o.redop == ReduceOp::BitAnd || o.redop == ReduceOp::BitOr || o.redop == ReduceOp::BitXor)  // its checks know arithmetic
      throw std::invalid_argument("-o: '" + v + "' is not measured; the benchmark times sum, prod, min, max, avg");
  } else if (flag == "-d" || flag == "--datatype") {
    try { o.dtype = mpidist::dtype_from_string(v); } catch (const mpidist::Error& e) { throw std::invalid_argument("-d: " + e.detail()); }
    if (o.dtype == mpidist::DataType::Complex64 || o.dtype == mpidist::DataType::Complex128)
      throw std::invalid_argument("-d: " + v + " is not measured separately: a complex sum moves and adds its real parts, "
                                  "so -d float32 (float64) at twice the size measures it");
  } else if (flag == "--backend") {
    if (v != "mpi" && v != "nccl" && v != "auto") throw std::invalid_argument("--backend: '" + v + "' is not mpi, nccl or auto");
    o.backend = v;
  } else if (flag == "--threads") {
    if (v != "funneled" && v != "multiple") throw std::invalid_argument("--threads: '" + v + "' is not funneled or multiple");
    o.threads = v;
  } else if (flag == "--json") o.json_path = v;
  else if (flag == "--csv") o.csv_path = v;
  else if (flag == "--compare") o.compare_path = v;
  else if (flag == "--group") {
    // "2" or "1,2,4": one table section per group size, in the order given.
    o.groups.clear();
    for (std::size_t start = 0; start <= v.size();) {
      const std::size_t comma = std::min(v.find(',', start), v.size());
      o.groups.push_back(static_cast<int>(parse_int(flag, v.substr(start, comma - start), 1)));
      start = comma + 1;
    }
  } else return false;
  return true;
}

}  // namespace

std::string usage() {
  std::string ops;
  for (const OpHooks* op : all_ops()) ops += std::string(ops.empty() ? "" : ", ") + std::string(op->name);
  return "usage: mpiexec -n N mpidist-bench <op> [flags]\n"
         "  op: " + ops + "\n"
         "  -b SIZE   smallest message in bytes (8, 1K, 64K, 1M, 256M; default 8)\n"
         "  -e SIZE   largest message (default 32M)\n"
         "  -f X      size factor between steps (default 2)\n"
         "  -n N      timed iterations per size (default 20)\n"
         "  -w N      warm-up iterations per size (default 5)\n"
         "  -c 0|1    check the results (default 1); any wrong value makes the exit code 1\n"
         "  -o OP     sum, prod, min, max, avg (default sum)\n"
         "  -d TYPE   float16|half, bfloat16, float32|float, float64|double, int8, uint8, int32|int, int64, uint32, uint64\n"
         "  -r ROOT   root rank of broadcast, reduce, gather, scatter, object_broadcast (default 0)\n"
         "  --backend mpi|nccl|auto   host buffers over MPI, or device buffers over NCCL (default auto:\n"
         "            device buffers when built with NCCL and a GPU is visible)\n"
         "  --in-place / --out-of-place   (default out of place; broadcast is always in place)\n"
         "  --threads funneled|multiple   the thread level the job runs at (default funneled); multiple\n"
         "            shows what MPI_THREAD_MULTIPLE's locking costs (and lets watchdogs ask other hosts)\n"
         "  --json FILE  --csv FILE       write the results (rank 0)\n"
         "  --compare FILE.json           print the change against an earlier --json run\n"
         "  --many K  all_reduce_many: K buffers of each size per call (raw MPI: K MPI_Allreduce calls)\n"
         "  --group N[,N...]  run inside groups of N consecutive ranks (mpidist::new_subgroups(N); N must\n"
         "            divide the rank count), raw MPI on the same split; one section per N (default: world)\n"
         "Time is the median over iterations of the slowest rank (barrier before each iteration); raw\n"
         "MPI (and raw NCCL with --backend nccl) runs interleaved with mpidist; ratio = mpidist/raw.\n"
         "Host runs first measure a memcpy reference (2 threads on rank 0) and print busbw as a fraction of it.\n";
}

std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") return std::nullopt;
    if (arg == "--in-place") { o.in_place = true; continue; }
    if (arg == "--out-of-place") { o.in_place = false; continue; }
    if (!arg.starts_with("-")) {
      if (!o.op.empty()) throw std::invalid_argument("unexpected argument '" + std::string(arg) + "' (op is '" + o.op + "')");
      if (find_op(arg) == nullptr) throw std::invalid_argument("unknown op '" + std::string(arg) + "'");
      o.op = arg;
      continue;
    }
    // nccl-tests spells it "-c 1"; a bare "-c" (next argument not a number) also turns checks on.
    if (arg == "-c" && (i + 1 >= argc || std::string_view(argv[i + 1]).find_first_not_of("0123456789") != std::string_view::npos)) {
      o.check = true;
      continue;
    }
    // Split "--json=FILE" and "-b8" into flag and attached value.
    std::string_view flag = arg, attached;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      attached = arg.substr(eq + 1);
    } else if (!arg.starts_with("--") && arg.size() > 2) {
      flag = arg.substr(0, 2);
      attached = arg.substr(2);
    }
    const std::string value = flag_value(argc, argv, i, flag, attached);
    if (!apply_valued(o, flag, value)) throw std::invalid_argument("unknown flag '" + std::string(flag) + "'");
  }
  if (o.op.empty()) throw std::invalid_argument("no op given");
  if (o.min_bytes > o.max_bytes)
    throw std::invalid_argument("-b " + format_size(o.min_bytes) + " is larger than -e " + format_size(o.max_bytes));
  return o;
}

std::size_t parse_size(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string_view suffix = text.substr(digits);
  int shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) digits = 0;  // junk after the number
  if (digits == 0 || digits > 15) throw std::invalid_argument("size '" + std::string(text) + "' is not like 8, 1K, 64K, 1M, 1G");
  return std::stoull(std::string(text.substr(0, digits))) << shift;
}

std::string format_size(std::size_t bytes) {
  static constexpr const char* units[] = {"", "K", "M", "G"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) { bytes /= 1024; ++unit; }
  return std::to_string(bytes) + units[unit];
}

std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, double factor) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = min_bytes; s < max_bytes;) {
    sizes.push_back(s);
    const auto next = static_cast<std::size_t>(std::llround(static_cast<double>(s) * factor));
    s = next > s ? next : s + 1;
  }
  sizes.push_back(max_bytes);
  return sizes;
}

}  // namespace bench
