// The sweep of one op: data checks and interleaved timing against raw MPI.
#include "runner.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "mpidist/config.hpp"
#include "mpidist/device.hpp"
#include "mpidist/environment.hpp"
#include "mpidist/topology.hpp"
#include "memcpy_reference.hpp"
#include "progress.hpp"
#include "raw_mpi.hpp"
#include "raw_nccl.hpp"
#include "report.hpp"

namespace bench {
namespace {

/// One contender of the race: a way to run the op and its per-iteration times.
struct Contender {
  int side = 0;  ///< 0 mpidist, 1 raw MPI, 2 raw NCCL
  void (*fn)(Run&) = nullptr;
  std::vector<double> seconds;
};

/// The run buffers: host memory, plus device memory and host mirrors for --backend nccl.
class Buffers {
 public:
  Buffers(std::size_t send_bytes, std::size_t recv_bytes, bool device)
      : host_send_(alloc_host(send_bytes)), host_recv_(alloc_host(recv_bytes)), device_(device) {
    if (device_) {
      dev_send_ = device_alloc(send_bytes);
      dev_recv_ = device_alloc(recv_bytes);
    }
  }
  ~Buffers() {
    if (device_) {
      device_free(dev_send_);
      device_free(dev_recv_);
    }
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  /// Points run's buffers at this step's layout (in place: one buffer, nccl-tests' offsets).
  void lay_out(Run& run, const OpHooks& op) const {
    const std::size_t elem = mpidist::size_of(run.dtype);
    std::size_t send_off = 0, recv_off = 0;  // bytes into the shared buffer, in place
    const bool shared = run.in_place || op.in_place_only;
    if (shared && op.in_place == OpHooks::InPlace::SendInRecv) send_off = static_cast<std::size_t>(run.rank) * run.counts.send * elem;
    if (shared && op.in_place == OpHooks::InPlace::RecvInSend) recv_off = static_cast<std::size_t>(run.rank) * run.counts.recv * elem;
    // The shared buffer is the larger side: recv for Same and SendInRecv, send for RecvInSend.
    const bool in_send = shared && op.in_place == OpHooks::InPlace::RecvInSend;
    std::byte* hs = host_send_.get();
    std::byte* hr = host_recv_.get();
    auto* ds = static_cast<std::byte*>(dev_send_);
    auto* dr = static_cast<std::byte*>(dev_recv_);
    if (shared && !in_send) { hs = hr; ds = dr; }
    if (in_send) { hr = hs; dr = ds; }
    run.host_send = hs + send_off;
    run.host_recv = hr + recv_off;
    run.send = device_ ? static_cast<void*>(ds + send_off) : run.host_send;
    run.recv = device_ ? static_cast<void*>(dr + recv_off) : run.host_recv;
  }

 private:
  struct FreeHost { void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{4096}); } };
  using HostPtr = std::unique_ptr<std::byte[], FreeHost>;
  static HostPtr alloc_host(std::size_t bytes) {
    // Page-aligned like cudaMalloc'd memory, and touched now so the first timed call pays no faults.
    auto* p = static_cast<std::byte*>(::operator new[](std::max<std::size_t>(bytes, 1), std::align_val_t{4096}));
    std::memset(p, 0, bytes);
    return HostPtr(p);
  }
  HostPtr host_send_, host_recv_;
  bool device_;
  void* dev_send_ = nullptr;
  void* dev_recv_ = nullptr;
};

std::size_t elem_bytes(const Run& run) { return mpidist::size_of(run.dtype); }

// The op's counts for a size step; --many K ops hold K buffers of that size.
Counts counts_of(const OpHooks& op, const Options& o, std::size_t bytes, int nranks) {
  Counts c = op.counts(bytes, mpidist::size_of(o.dtype), nranks);
  if (op.many) {
    const auto k = static_cast<std::size_t>(o.many);
    c = {.send = c.send * k, .recv = c.recv * k, .shown = c.shown * k, .bytes = c.bytes * k};
  }
  return c;
}

// init → (upload) → run once → (download) → check, summed over ranks.
std::size_t checked_run(const OpHooks& op, Run& run, const Contender& c) {
  run.side = c.side;
  op.init(run);
  if (run.device) {
    copy_to_device(run.send, run.host_send, run.counts.send * elem_bytes(run));
    copy_to_device(run.recv, run.host_recv, run.counts.recv * elem_bytes(run));
  }
  c.fn(run);
  if (run.device) copy_to_host(run.host_recv, run.recv, run.counts.recv * elem_bytes(run));
  unsigned long long wrong = op.check(run);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, run.sync_comm);
  return wrong;
}

// Warm-up then timed iterations, the contenders rotating their order every iteration so that
// noise and cache effects fall on all of them alike. Each timed call follows a barrier over all
// ranks (with --group, every group starts together, as concurrent groups do in training); each
// iteration's time is the slowest rank's of all groups (one MPI_Allreduce MAX over the series at
// the end keeps the reduction out of the timed loop).
void race(Run& run, std::vector<Contender>& contenders, int warmup, int iters) {
  const std::size_t m = contenders.size();
  for (auto& c : contenders) c.seconds.assign(static_cast<std::size_t>(iters), 0.0);
  for (int it = 0; it < warmup + iters; ++it) {
    for (std::size_t k = 0; k < m; ++k) {
      Contender& c = contenders[(k + static_cast<std::size_t>(it)) % m];
      MPI_Barrier(run.sync_comm);
      const double t0 = MPI_Wtime();
      c.fn(run);
      const double dt = MPI_Wtime() - t0;
      if (it >= warmup) c.seconds[static_cast<std::size_t>(it - warmup)] = dt;
    }
  }
  for (auto& c : contenders)
    MPI_Allreduce(MPI_IN_PLACE, c.seconds.data(), iters, MPI_DOUBLE, MPI_MAX, run.sync_comm);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// --backend: nccl needs a NCCL build and a device; auto picks device buffers only when both exist.
bool use_device(const OpHooks& op, const Options& o) {
  if (o.backend == "mpi" || op.objects || op.run_raw_nccl == nullptr) {
    if (o.backend == "nccl" && (op.objects || op.run_raw_nccl == nullptr))
      throw std::invalid_argument(std::string(op.name) + " has no NCCL form; use --backend mpi");
    return false;
  }
  const bool possible = raw_nccl_built() && device_present();
  if (o.backend == "nccl" && !possible)
    throw std::invalid_argument("--backend nccl: this build has no NCCL or this rank sees no GPU");
  return possible;
}

// The group sizes of the sweep (the world alone without --group), refused before any collective
// when one does not fit: every rank checks the same values, so every rank refuses together.
std::vector<int> group_sizes(const Options& o, int world) {
  if (o.groups.empty()) return {world};
  for (int g : o.groups)
    if (world % g != 0)
      throw std::invalid_argument("--group " + std::to_string(g) + " does not divide the " + std::to_string(world) +
                                  " ranks");
  return o.groups;
}

RunInfo describe(const OpHooks& op, const Options& o, bool device) {
  RunInfo info;
  info.op = op.name;
  info.ranks = mpidist::world_size();
  info.nodes = mpidist::num_nodes();
  info.backend = device ? "nccl" : "mpi";
  info.dtype = op.has_data ? std::string(mpidist::to_string(o.dtype)) : "none";
  info.redop = op.reduces ? std::string(mpidist::to_string(o.redop)) : "none";
  info.mpi_library = mpidist::local_report().mpi_library;
  info.date = utc_now();
  return info;
}

// One size step: check every contender once, then race them; the row's numbers.
Result measure(const OpHooks& op, Run& run, std::vector<Contender>& contenders, const Options& o,
               std::size_t& raw_wrong) {
  Result r;
  r.group = run.nranks;
  r.bytes = run.counts.bytes;
  r.count = run.counts.shown;
  if (o.check && op.has_data) {
    r.wrong = checked_run(op, run, contenders[0]);
    for (std::size_t k = 1; k < contenders.size(); ++k) raw_wrong += checked_run(op, run, contenders[k]);
  }
  op.init(run);  // the timed calls start from valid data too (in place keeps reducing it)
  race(run, contenders, o.warmup, o.iters);
  r.mpidist = summarize(contenders[0].seconds);
  for (std::size_t k = 1; k < contenders.size(); ++k)
    (contenders[k].side == 1 ? r.raw_mpi : r.raw_nccl) = summarize(contenders[k].seconds);
  if (op.has_data && r.mpidist.median_us > 0) {
    r.algbw = static_cast<double>(r.bytes) / 1e3 / r.mpidist.median_us;  // bytes/µs/1e3 = GB/s
    r.busbw = r.algbw * op.bus_factor(run.nranks);
  }
  return r;
}

}  // namespace

Timing summarize(std::vector<double> seconds) {
  if (seconds.empty()) return {};
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  const double median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  return {median * 1e6, seconds.front() * 1e6, seconds.back() * 1e6};
}

SweepOutcome run_sweep(const OpHooks& op, const Options& o, std::ostream& out) {
  SweepOutcome outcome;
  const bool device = use_device(op, o);
  outcome.info = describe(op, o, device);
  const bool main_rank = mpidist::rank() == 0;
  const std::vector<int> groups = group_sizes(o, outcome.info.ranks);
  Run run;
  run.options = &o;
  run.dtype = o.dtype;
  run.redop = op.reduces ? o.redop : mpidist::ReduceOp::Sum;
  run.root = o.root;
  run.in_place = o.in_place || op.in_place_only;
  if (o.in_place && op.out_of_place_only)
    throw std::invalid_argument("--in-place: " + std::string(op.name) + " has no in-place form");
  run.device = device;
  const int smallest = *std::min_element(groups.begin(), groups.end());
  if (op.rooted && o.root >= smallest)
    throw std::invalid_argument("-r " + std::to_string(o.root) + " out of range for " + std::to_string(smallest) + " ranks");

  const std::vector<std::size_t> sizes = op.has_data ? size_sweep(o.min_bytes, o.max_bytes, o.factor) : std::vector<std::size_t>{0};
  std::size_t max_send = 0, max_recv = 0;
  for (int g : groups) {
    for (std::size_t bytes : sizes) {
      const Counts c = counts_of(op, o, bytes, g);
      max_send = std::max(max_send, c.send * mpidist::size_of(o.dtype));
      max_recv = std::max(max_recv, c.recv * mpidist::size_of(o.dtype));
    }
  }
  if (device) mpidist::device();  // cudaSetDevice(local_rank % devices) before any allocation
  Buffers buffers(op.objects ? 0 : max_send, op.objects ? 0 : max_recv, device);
  MPI_Comm_dup(MPI_COMM_WORLD, &run.sync_comm);

  std::vector<Contender> contenders{{0, op.run_mpidist, {}}};
  if (!device) contenders.push_back({1, op.run_raw_mpi, {}});  // raw MPI runs on host buffers
  if (device) contenders.push_back({2, op.run_raw_nccl, {}});

  if (!device && op.has_data && !op.objects) outcome.info.memcpy_gbps = memcpy_reference(run.sync_comm);
  if (main_rank) print_header(out, outcome.info, o, device);
  std::vector<std::size_t> steps;
  for (std::size_t k = 0; k < groups.size(); ++k) steps.insert(steps.end(), sizes.begin(), sizes.end());
  Progress progress(steps, std::string(op.name), progress_wanted(), std::cerr);
  for (int g : groups) {
    // The ops run in the group, the raw side on a duplicate of the same split (like with like).
    run.comm = o.groups.empty() ? mpidist::world() : mpidist::new_subgroups(g);
    run.rank = run.comm.rank();
    run.nranks = run.comm.size();
    MPI_Comm_dup(run.comm.native(), &run.raw_comm);
    if (device) nccl_setup(run, run.raw_comm);
    if (main_rank && !o.groups.empty()) print_group(out, g, outcome.info.ranks / g);
    for (std::size_t bytes : sizes) {
      run.counts = counts_of(op, o, bytes, run.nranks);
      if (!op.objects) buffers.lay_out(run, op);
      Result r = measure(op, run, contenders, o, outcome.raw_wrong);
      if (main_rank) print_row(out, op, outcome.info, o, r);
      progress.step_done(bytes);
      outcome.results.push_back(r);
    }
    if (device) nccl_teardown(run);
    MPI_Comm_free(&run.raw_comm);
    run.comm = {};  // every rank drops its group here, together
  }
  MPI_Comm_free(&run.sync_comm);
  return outcome;
}

}  // namespace bench
