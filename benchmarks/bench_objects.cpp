// bench_objects: the object collectives (objects.hpp) against Boost.MPI's own collectives (where
// the build has a Boost.MPI for its MPI: not with MPICH on Debian), broadcast, gather, all_gather
// and send/recv (rank 0 to the last), a hand-written pack over raw
// MPI (size message, then bytes, objects rebuilt on the receiver) and the raw bytes alone, in one
// run. Payloads: a small struct (an int and a 16-character string),
// a 100-key std::map<std::string, std::vector<float>> of 1000 floats per key (~400 KB), and a
// 16 MiB std::vector<float>. Each time is the median over iterations of the slowest rank, with a
// barrier before every iteration. Every result is checked; a wrong value exits non-zero.
//
//   mpiexec -n 2 bench_objects [--iters-scale X] [--json]
#include <mpi.h>

#include <algorithm>
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "boost_mpi_baseline.hpp"
#include "mpidist/mpidist.hpp"

namespace {

struct Small {
  int id = 0;
  std::string name;
  template <class Archive>
  void serialize(Archive& ar, unsigned int) {
    ar& id& name;
  }
  bool operator==(const Small&) const = default;
};
using FloatMap = std::map<std::string, std::vector<float>>;

Small make_small(int rank) { return Small{rank, std::string(16, static_cast<char>('a' + rank % 26))}; }
FloatMap make_map(int rank) {
  FloatMap m;
  for (int k = 0; k < 100; ++k)
    m["metric/" + std::to_string(k)] = std::vector<float>(1000, static_cast<float>(rank + k));
  return m;
}
std::vector<float> make_vector(int rank) { return std::vector<float>(std::size_t{4} << 20, static_cast<float>(rank)); }

// ---- the hand-written pack: what a careful user writes over raw MPI ----
void put(std::vector<char>& out, const void* p, std::size_t n) {
  out.insert(out.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
}
void pack(const Small& s, std::vector<char>& out) {
  const std::uint32_t n = static_cast<std::uint32_t>(s.name.size());
  put(out, &s.id, sizeof s.id);
  put(out, &n, sizeof n);
  put(out, s.name.data(), n);
}
void pack(const FloatMap& m, std::vector<char>& out) {
  for (const auto& [key, values] : m) {
    const std::uint32_t k = static_cast<std::uint32_t>(key.size());
    const std::uint64_t n = values.size();
    put(out, &k, sizeof k);
    put(out, key.data(), k);
    put(out, &n, sizeof n);
    put(out, values.data(), n * sizeof(float));
  }
}
template <class T>
void take(const char*& p, T& value) {
  std::memcpy(&value, p, sizeof(T));
  p += sizeof(T);
}
void unpack(const char* p, const char*, Small& s) {
  std::uint32_t n = 0;
  take(p, s.id);
  take(p, n);
  s.name.assign(p, n);
}
void unpack(const char* p, const char* end, FloatMap& m) {
  while (p < end) {
    std::uint32_t k = 0;
    std::uint64_t n = 0;
    take(p, k);
    std::string key(p, k);
    p += k;
    take(p, n);
    auto& values = m[key];
    values.resize(n);
    std::memcpy(values.data(), p, n * sizeof(float));
    p += n * sizeof(float);
  }
}

template <class T>
T hand_broadcast(const T& value, MPI_Comm comm, int root, int rank) {
  std::vector<char> bytes;
  if (rank == root) pack(value, bytes);
  std::uint64_t size = bytes.size();
  MPI_Bcast(&size, 1, MPI_UINT64_T, root, comm);
  bytes.resize(size);
  MPI_Bcast(bytes.data(), static_cast<int>(size), MPI_BYTE, root, comm);
  if (rank == root) return value;
  T out;
  unpack(bytes.data(), bytes.data() + size, out);
  return out;
}

// One message of packed bytes; the receiver learns the size from MPI_Probe.
template <class T>
void hand_send(const T& value, MPI_Comm comm, int dest) {
  std::vector<char> bytes;
  pack(value, bytes);
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, 0, comm);
}
template <class T>
T hand_recv(MPI_Comm comm, int src) {
  MPI_Status status;
  MPI_Probe(src, 0, comm, &status);
  int size = 0;
  MPI_Get_count(&status, MPI_BYTE, &size);
  std::vector<char> bytes(static_cast<std::size_t>(size));
  MPI_Recv(bytes.data(), size, MPI_BYTE, src, 0, comm, MPI_STATUS_IGNORE);
  T out;
  unpack(bytes.data(), bytes.data() + size, out);
  return out;
}

template <class T>
std::vector<T> hand_gather(const T& value, MPI_Comm comm, int root, int rank, int size, bool all) {
  std::vector<char> mine;
  pack(value, mine);
  const int my_size = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  if (all)
    MPI_Allgather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm);
  else
    MPI_Gather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm);
  for (int r = 1; r < size; ++r)
    displs[static_cast<std::size_t>(r)] =
        displs[static_cast<std::size_t>(r - 1)] + sizes[static_cast<std::size_t>(r - 1)];
  std::vector<char> bytes(static_cast<std::size_t>(displs.back() + sizes.back()));
  if (all)
    MPI_Allgatherv(mine.data(), my_size, MPI_BYTE, bytes.data(), sizes.data(), displs.data(), MPI_BYTE, comm);
  else
    MPI_Gatherv(mine.data(), my_size, MPI_BYTE, bytes.data(), sizes.data(), displs.data(), MPI_BYTE, root, comm);
  std::vector<T> out;
  if (!all && rank != root) return out;
  for (int r = 0; r < size; ++r) {
    const char* p = bytes.data() + displs[static_cast<std::size_t>(r)];
    out.emplace_back();
    unpack(p, p + sizes[static_cast<std::size_t>(r)], out.back());
  }
  return out;
}

// ---- measurement ----
struct Row {
  std::string payload, op, impl;
  std::size_t bytes;
  double usec;       // median over iterations of the slowest rank
  double best_usec;  // fastest iteration: what the call costs on a quiet machine
};
struct Timing {
  double median, best;
};

struct Candidate {
  std::string impl;
  std::function<void()> body;
};

// The candidates, with Boost.MPI's in second place where this build has it.
std::vector<Candidate> with_boost(std::vector<Candidate> others, Candidate boost) {
  if (boost_baseline::available) others.insert(others.begin() + 1, std::move(boost));
  return others;
}
// A Boost.MPI result is right, or there is no Boost.MPI in this build.
template <class T>
bool boost_agrees(const T& result, const T& expected) {
  return !boost_baseline::available || result == expected;
}

// Times every candidate in turn within each iteration (so a burst of load elsewhere on the machine
// hits them all alike), with a barrier before each call. Returns, per candidate, the median over
// iterations of the slowest rank's time in microseconds, and the fastest iteration.
std::vector<Timing> measure(int iterations, MPI_Comm comm, const std::vector<Candidate>& candidates) {
  const std::size_t k = candidates.size();
  for (int i = 0; i < std::max(3, iterations / 10); ++i)
    for (const auto& c : candidates) c.body();  // warm-up
  std::vector<double> times(k * static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    for (std::size_t j = 0; j < k; ++j) {
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      candidates[j].body();
      times[j * static_cast<std::size_t>(iterations) + static_cast<std::size_t>(i)] = MPI_Wtime() - start;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, comm);
  std::vector<Timing> result;
  for (std::size_t j = 0; j < k; ++j) {
    auto first = times.begin() + static_cast<std::ptrdiff_t>(j * static_cast<std::size_t>(iterations));
    std::nth_element(first, first + iterations / 2, first + iterations);
    const double median = *(first + iterations / 2);
    result.push_back(Timing{median * 1e6, *std::min_element(first, first + iterations) * 1e6});
  }
  return result;
}

bool g_wrong = false;
void check(bool ok, const char* what) {
  if (!ok && !g_wrong) std::fprintf(stderr, "bench_objects: WRONG result in %s\n", what);
  g_wrong = g_wrong || !ok;
}

struct Bench {
  MPI_Comm comm;
  boost_baseline::Comm boost_comm;
  int rank, size, root;
  double scale;
  std::vector<Row> rows;

  int iters(int n) const { return std::max(5, static_cast<int>(n * scale)); }
  void add(const std::string& payload, const std::string& op, std::size_t bytes, int n,
           const std::vector<Candidate>& candidates) {
    const auto t = measure(iters(n), comm, candidates);
    for (std::size_t j = 0; j < candidates.size(); ++j)
      rows.push_back(Row{payload, op, candidates[j].impl, bytes, t[j].median, t[j].best});
  }

  // broadcast, gather and all_gather of T through mpidist, Boost.MPI, the hand pack and raw bytes.
  // Results are checked after the timing, so a comparison never counts as communication.
  template <class T>
  void run_objects(const std::string& name, T (*make)(int), std::size_t raw_bytes, int n) {
    const T mine = make(rank), from_root = make(root);
    std::vector<T> everyone;
    for (int r = 0; r < size; ++r) everyone.push_back(make(r));
    std::vector<char> raw(raw_bytes * static_cast<std::size_t>(size));
    T by_mpidist, by_boost, by_hand;
    add(name, "broadcast", raw_bytes, n,
        with_boost({{"mpidist", [&] { by_mpidist = mpidist::broadcast(mine, root); }},
                    {"hand pack", [&] { by_hand = hand_broadcast(mine, comm, root, rank); }},
                    {"raw bytes", [&] { MPI_Bcast(raw.data(), static_cast<int>(raw_bytes), MPI_BYTE, root, comm); }}},
                   {"boost.mpi", [&] {
                      by_boost = mine;
                      boost_comm.broadcast(by_boost, root);
                    }}));
    check(by_mpidist == from_root && boost_agrees(by_boost, from_root) && by_hand == from_root, "broadcast");
    run_gathers(name, mine, everyone, raw, raw_bytes, n);
    run_send_recv(name, make, raw, raw_bytes, n);
  }

  // send/recv from rank 0 to the last rank (the others only take part in the barriers).
  template <class T>
  void run_send_recv(const std::string& name, T (*make)(int), std::vector<char>& raw, std::size_t raw_bytes, int n) {
    if (size < 2) return;
    const int dest = size - 1;
    const T sent = make(0);
    T by_mpidist, by_boost, by_hand;
    auto pair = [&](auto send, auto recv) {
      return [this, dest, send, recv] {
        if (rank == 0) send();
        else if (rank == dest) recv();
      };
    };
    const int count = static_cast<int>(raw_bytes);
    add(name, "send/recv", raw_bytes, n,
        with_boost({{"mpidist", pair([&] { mpidist::send(sent, dest); }, [&] { by_mpidist = mpidist::recv<T>(0); })},
                    {"hand pack", pair([&] { hand_send(sent, comm, dest); }, [&] { by_hand = hand_recv<T>(comm, 0); })},
                    {"raw bytes", pair([&] { MPI_Send(raw.data(), count, MPI_BYTE, dest, 0, comm); },
                                       [&] { MPI_Recv(raw.data(), count, MPI_BYTE, 0, 0, comm, MPI_STATUS_IGNORE); })}},
                   {"boost.mpi", pair([&] { boost_comm.send(sent, dest, 0); }, [&] { boost_comm.recv(by_boost, 0, 0); })}));
    if (rank == dest) check(by_mpidist == sent && boost_agrees(by_boost, sent) && by_hand == sent, "send/recv");
  }

  template <class T>
  void run_gathers(const std::string& name, const T& mine, const std::vector<T>& everyone, std::vector<char>& raw,
                   std::size_t raw_bytes, int n) {
    const int count = static_cast<int>(raw_bytes);
    const std::vector<T> expected = rank == root ? everyone : std::vector<T>{};
    std::optional<std::vector<T>> by_mpidist;
    std::vector<T> by_boost, by_hand;
    add(name, "gather", raw_bytes, n,
        with_boost({{"mpidist", [&] { by_mpidist = mpidist::gather(mine, root); }},
                    {"hand pack", [&] { by_hand = hand_gather(mine, comm, root, rank, size, false); }},
                    {"raw bytes",
                     [&] {
                       MPI_Gather(rank == root ? MPI_IN_PLACE : raw.data(), count, MPI_BYTE, raw.data(), count,
                                  MPI_BYTE, root, comm);
                     }}},
                   {"boost.mpi", [&] {
                      by_boost.clear();
                      boost_comm.gather(mine, by_boost, root);
                    }}));
    check((rank == root ? by_mpidist && *by_mpidist == everyone : !by_mpidist) && boost_agrees(by_boost, expected) &&
              by_hand == expected,
          "gather");
    std::vector<T> all_mpidist;
    add(name, "all_gather", raw_bytes, n,
        with_boost(
            {{"mpidist", [&] { all_mpidist = mpidist::all_gather(mine); }},
             {"hand pack", [&] { by_hand = hand_gather(mine, comm, root, rank, size, true); }},
             {"raw bytes", [&] { MPI_Allgather(MPI_IN_PLACE, count, MPI_BYTE, raw.data(), count, MPI_BYTE, comm); }}},
            {"boost.mpi", [&] {
               by_boost.clear();
               boost_comm.all_gather(mine, by_boost);
             }}));
    check(all_mpidist == everyone && boost_agrees(by_boost, everyone) && by_hand == everyone, "all_gather");
  }

  // A 16 MiB std::vector<float>: mpidist by copy and by move (receiving into the caller's
  // buffer), Boost.MPI, size + resize + bytes by hand, and a raw MPI_Bcast of the bytes.
  void run_vector(int n) {
    const auto mine = make_vector(rank), from_root = make_vector(root);
    const std::size_t bytes = mine.size() * sizeof(float);
    std::vector<float> by_copy, by_move = mine, by_boost, by_hand, raw = mine;
    add("vector<float> 16MiB", "broadcast", bytes, n,
        with_boost({{"mpidist", [&] { by_copy = mpidist::broadcast(mine, root); }},
                    {"mpidist mv", [&] { by_move = mpidist::broadcast(std::move(by_move), root); }},
                    {"hand pack",
                     [&] {
                       std::uint64_t count = mine.size();
                       MPI_Bcast(&count, 1, MPI_UINT64_T, root, comm);
                       by_hand = rank == root ? mine : std::vector<float>(count);
                       MPI_Bcast(by_hand.data(), static_cast<int>(count), MPI_FLOAT, root, comm);
                     }},
                    {"raw bytes", [&] { MPI_Bcast(raw.data(), static_cast<int>(raw.size()), MPI_FLOAT, root, comm); }}},
                   {"boost.mpi", [&] {
                      by_boost = mine;
                      boost_comm.broadcast(by_boost, root);
                    }}));
    check(by_copy == from_root && by_move == from_root && boost_agrees(by_boost, from_root) && by_hand == from_root &&
              raw == from_root,
          "vector broadcast");
  }
};

double find(const std::vector<Row>& rows, const std::string& payload, const std::string& op, const std::string& impl,
            bool best = false) {
  for (const auto& r : rows)
    if (r.payload == payload && r.op == op && r.impl == impl) return best ? r.best_usec : r.usec;
  return 0;
}

void print_table(const std::vector<Row>& rows, int size) {
  std::printf("# bench_objects: %d ranks; time = median over iterations of the slowest rank\n", size);
  if (!boost_baseline::available)
    std::printf("# Boost.MPI baseline left out: this build has no Boost.MPI for its MPI (Debian's is Open MPI's)\n");
  std::printf("%-20s %-11s %-10s %10s %12s %9s %9s %12s\n", "payload", "op", "impl", "size(B)", "time(us)", "vs raw",
              "vs hand", "best(us)");
  for (const auto& r : rows) {
    const double raw = find(rows, r.payload, r.op, "raw bytes"), hand = find(rows, r.payload, r.op, "hand pack");
    std::printf("%-20s %-11s %-10s %10zu %12.2f %8.2fx %8.2fx %12.2f\n", r.payload.c_str(), r.op.c_str(),
                r.impl.c_str(), r.bytes, r.usec, r.usec / raw, r.usec / hand, r.best_usec);
  }
}

// The targets, as ratios of this run's own baselines.
struct Target {
  const char* what;
  double ratio, best_ratio, limit;
};
std::vector<Target> targets(const std::vector<Row>& rows) {
  auto ratio = [&](const char* what, const char* payload, const char* impl, const char* base, double limit,
                   const char* op = "broadcast") {
    return Target{what, find(rows, payload, op, impl) / find(rows, payload, op, base),
                  find(rows, payload, op, impl, true) / find(rows, payload, op, base, true), limit};
  };
  std::vector<Target> ts{
      ratio("map broadcast: mpidist / hand pack", "map 100x1000f", "mpidist", "hand pack", 1.5),
      ratio("map send/recv: mpidist / hand pack", "map 100x1000f", "mpidist", "hand pack", 1.5, "send/recv"),
      ratio("small struct broadcast: mpidist / raw 20-byte MPI_Bcast", "struct int+16ch", "mpidist", "raw bytes", 1.5),
      ratio("16 MiB vector broadcast (move): mpidist / raw MPI_Bcast", "vector<float> 16MiB", "mpidist mv", "raw bytes",
            1.05),
      ratio("16 MiB vector broadcast (copy): mpidist / hand size+bytes", "vector<float> 16MiB", "mpidist", "hand pack",
            0),
  };
  if (boost_baseline::available) {
    ts.push_back(ratio("map broadcast: boost.mpi / mpidist (speed-up)", "map 100x1000f", "boost.mpi", "mpidist", 0));
    ts.push_back(ratio("small struct broadcast: boost.mpi / raw", "struct int+16ch", "boost.mpi", "raw bytes", 0));
  }
  return ts;
}

// The verdict uses the medians; the best-iteration ratio shows what a loaded machine hides.
void print_targets(const std::vector<Target>& ts) {
  std::printf("\n%-58s %8s %8s %8s\n", "target", "ratio", "best", "limit");
  for (const auto& t : ts) {
    if (t.limit > 0)
      std::printf("%-58s %7.2fx %7.2fx %7.2fx %s\n", t.what, t.ratio, t.best_ratio, t.limit,
                  t.ratio <= t.limit ? "met" : "MISSED");
    else
      std::printf("%-58s %7.2fx %7.2fx %8s\n", t.what, t.ratio, t.best_ratio, "-");
  }
}

void print_json(const std::vector<Row>& rows, const std::vector<Target>& ts, int size) {
  std::printf("{\"ranks\": %d, \"boost_mpi\": %s, \"rows\": [", size, boost_baseline::available ? "true" : "false");
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::printf(
        "%s\n  {\"payload\": \"%s\", \"op\": \"%s\", \"impl\": \"%s\", \"bytes\": %zu, \"usec\": %.3f, \"best_usec\": "
        "%.3f}",
        i ? "," : "", rows[i].payload.c_str(), rows[i].op.c_str(), rows[i].impl.c_str(), rows[i].bytes, rows[i].usec,
        rows[i].best_usec);
  std::printf("],\n \"targets\": [");
  for (std::size_t i = 0; i < ts.size(); ++i)
    std::printf("%s\n  {\"what\": \"%s\", \"ratio\": %.4f, \"best_ratio\": %.4f, \"limit\": %.2f}", i ? "," : "",
                ts[i].what, ts[i].ratio, ts[i].best_ratio, ts[i].limit);
  std::printf("]}\n");
}

}  // namespace

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  bool json = false;
  double scale = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json")
      json = true;
    else if (arg == "--iters-scale" && i + 1 < argc)
      scale = std::stod(argv[++i]);
    else {
      if (mpidist::is_main_process()) std::fprintf(stderr, "usage: bench_objects [--iters-scale X] [--json]\n");
      return 2;
    }
  }
  MPI_Comm comm = mpidist::communicator();
  Bench b{comm, boost_baseline::Comm(comm), mpidist::rank(), mpidist::world_size(), 0, scale, {}};
  b.run_objects<Small>("struct int+16ch", &make_small, sizeof(int) + 16, 5000);
  b.run_objects<FloatMap>("map 100x1000f", &make_map, 100 * 1000 * sizeof(float), 300);
  b.run_vector(40);
  const int wrong = mpidist::all_reduce(g_wrong ? 1 : 0, mpidist::ReduceOp::Max);
  if (mpidist::is_main_process()) {
    const auto ts = targets(b.rows);
    if (json)
      print_json(b.rows, ts, b.size);
    else {
      print_table(b.rows, b.size);
      print_targets(ts);
    }
    if (wrong) std::fprintf(stderr, "bench_objects: some results were wrong\n");
  }
  return wrong ? 1 : 0;
}
