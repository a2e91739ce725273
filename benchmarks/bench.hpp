// mpidist-bench: the shared vocabulary of the benchmark. Like nccl-tests, each operation is one
// small file (ops/*.cpp) that fills an OpHooks table; the driver (runner.cpp) sweeps the sizes,
// times mpidist and raw MPI (and raw NCCL) interleaved, checks the data and prints the table.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mpidist/communicator.hpp"
#include "mpidist/reduce_op.hpp"
#include "mpidist/tensor.hpp"

namespace bench {

/// Which buffers the operation runs on, as chosen by --backend.
enum class Backend { Mpi, Nccl };

/// The command line, parsed (options.cpp). Flag names follow nccl-tests where one exists.
struct Options {
  std::string op;                         ///< all_reduce, broadcast, ...
  std::size_t min_bytes = 8;                 ///< -b
  std::size_t max_bytes = 32 * 1024 * 1024;  ///< -e
  double factor = 2.0;                    ///< -f: size multiplier between steps
  int iters = 20;                         ///< -n: timed iterations per size
  int warmup = 5;                         ///< -w: untimed iterations per size
  bool check = true;                      ///< -c: verify the data
  mpidist::ReduceOp redop = mpidist::ReduceOp::Sum;  ///< -o
  mpidist::DataType dtype = mpidist::DataType::Float32;  ///< -d
  int root = 0;                           ///< -r
  std::string backend = "auto";           ///< --backend mpi|nccl|auto
  std::string threads = "funneled";       ///< --threads funneled|multiple (read before initialization)
  bool in_place = false;                  ///< --in-place / --out-of-place
  std::string json_path;                  ///< --json FILE
  std::string csv_path;                   ///< --csv FILE
  std::string compare_path;               ///< --compare FILE.json
  std::vector<int> groups;                ///< --group N[,N...]: ranks per group; empty = the world
  int many = 1;                           ///< --many K: all_reduce_many's buffers per call
};

/// Parses argv; prints usage and returns nullopt after -h, throws std::invalid_argument (with a
/// message naming the flag and value) on bad input.
std::optional<Options> parse_options(int argc, char** argv);
/// The usage text printed by -h.
std::string usage();
/// "8", "1K", "64K", "1M", "256M", "1G" (a suffix multiplies by 1024^k) → bytes; throws on junk.
std::size_t parse_size(std::string_view text);
/// Bytes as nccl-tests prints them in messages: "64K", "1M", or plain bytes when not a round unit.
std::string format_size(std::size_t bytes);
/// Sizes from min to max, multiplied by factor each step (at least +1 byte), max always last.
std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, double factor);

/// Element counts of one step: what each rank sends and receives, and the nccl-tests "count".
struct Counts {
  std::size_t send = 0;   ///< elements in this rank's send buffer
  std::size_t recv = 0;   ///< elements in this rank's receive buffer
  std::size_t shown = 0;  ///< the "count" column (elements of the whole operation)
  std::size_t bytes = 0;  ///< the "size" column: the bytes the size step really moves
};

/// Everything an op's hooks need for one size step. The op runs inside `comm`: rank, nranks,
/// roots, the data pattern and the bus factor are the group's; every group does the same work.
struct Run {
  const Options* options = nullptr;
  mpidist::Communicator comm;         ///< the group mpidist's calls take (world() without --group)
  MPI_Comm raw_comm = MPI_COMM_NULL;  ///< a plain duplicate of comm.native() for the raw calls
  /// A duplicate of MPI_COMM_WORLD: the barrier before each timed call and the sums and maxima
  /// over all groups (so every group starts each iteration together, and a row is the slowest).
  MPI_Comm sync_comm = MPI_COMM_NULL;
  int rank = 0;    ///< within comm
  int nranks = 1;  ///< comm's size
  Counts counts;
  mpidist::DataType dtype = mpidist::DataType::Float32;
  mpidist::ReduceOp redop = mpidist::ReduceOp::Sum;
  int root = 0;
  bool in_place = false;
  /// Buffers as the collectives see them (host memory, or device memory for --backend nccl).
  void* send = nullptr;
  void* recv = nullptr;
  /// Host mirrors for init and check; same as send/recv for host buffers.
  std::byte* host_send = nullptr;
  std::byte* host_recv = nullptr;
  bool device = false;
  /// Which side the next check() looks at: 0 mpidist, 1 raw MPI, 2 raw NCCL (object ops keep a
  /// result per side; tensor ops share the run buffers and ignore it).
  int side = 0;
  /// Raw NCCL communicator and stream (opaque here; raw_nccl.cpp owns them), null without NCCL.
  void* nccl_comm = nullptr;
  void* nccl_stream = nullptr;
};

/// One operation, as nccl-tests' `testColl` table: sizes, data, bandwidth factor and the three
/// ways to run it. A null run_raw_nccl means raw NCCL has no counterpart (or is not built).
struct OpHooks {
  std::string_view name;
  bool reduces = false;   ///< takes -o (the redop column)
  bool rooted = false;    ///< takes -r (the root column)
  bool has_data = true;   ///< false for barrier: no size sweep, no check
  bool in_place_only = false;  ///< broadcast: the API is in place
  bool out_of_place_only = false;  ///< point-to-point and the uneven collectives: --in-place is refused
  bool objects = false;   ///< object ops keep their own host vectors: no run buffers, no device
  bool many = false;      ///< sizes are per buffer and the op runs --many K of them (all_reduce_many)
  /// Where, in place, the send block lies: the same buffer (all_reduce, reduce), this rank's block
  /// of the receive buffer (all_gather) or the receive block inside the send buffer
  /// (reduce_scatter), as in nccl-tests.
  enum class InPlace { Same, SendInRecv, RecvInSend } in_place = InPlace::Same;
  /// Element counts for a requested byte size (rounded down to what the op can split evenly).
  Counts (*counts)(std::size_t bytes, std::size_t elem_size, int nranks) = nullptr;
  /// busbw = algbw × factor (nccl-tests' getBw), n = the group's size.
  double (*bus_factor)(int nranks) = nullptr;
  /// Fills the host send buffer (and the receive buffer, in place) with this rank's pattern.
  void (*init)(Run& run) = nullptr;
  /// Number of wrong elements in this rank's host result after one run.
  std::size_t (*check)(const Run& run) = nullptr;
  void (*run_mpidist)(Run& run) = nullptr;
  void (*run_raw_mpi)(Run& run) = nullptr;
  void (*run_raw_nccl)(Run& run) = nullptr;
};

/// The table of every operation, in the order `-h` lists them.
const std::vector<const OpHooks*>& all_ops();
/// The hooks named `name`, or nullptr.
const OpHooks* find_op(std::string_view name);

/// Statistics of one timed series (slowest rank per iteration), in microseconds.
struct Timing {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};

/// One row of the table and of the JSON "results".
struct Result {
  int group = 1;  ///< ranks per group (the world size without --group)
  std::size_t bytes = 0;
  std::size_t count = 0;
  Timing mpidist;
  std::optional<Timing> raw_mpi;
  std::optional<Timing> raw_nccl;
  double algbw = 0;  ///< GB/s, from the mpidist median
  double busbw = 0;
  std::size_t wrong = 0;
  /// The raw time the ratio compares against (NCCL for the NCCL backend, else MPI), µs.
  double raw_time_us() const;
  /// mpidist time / raw time (0 when there is no raw time).
  double ratio() const;
};

/// What the JSON header says about the run.
struct RunInfo {
  std::string op;
  int ranks = 1;
  int nodes = 1;
  std::string backend;  ///< "mpi" or "nccl" as resolved
  std::string dtype;
  std::string redop;    ///< "none" for ops without a reduction
  std::string mpi_library;
  std::string date;     ///< ISO 8601 UTC
  /// The memcpy reference: GB/s copied by 2 threads on rank 0 in this run (0: not measured).
  double memcpy_gbps = 0;
};

}  // namespace bench
