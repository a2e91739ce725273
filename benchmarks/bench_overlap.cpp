// bench_overlap: one training step of a real model's gradient list, backward emulated by sleeps (a
// GPU computing while the host idles), in three ways:
//   sequential  backward, then one all_reduce_many of every gradient
//   per-tensor  all_reduce_async of each gradient as backward produces it, wait_all at the end
//   buckets     GradientBuckets (25 MiB buckets), mark_ready as backward produces each gradient;
//               each bucket streamed from its first mark (the default), and started at its last
//               (BucketOptions::stream = false)
// and beside them compute alone, communication alone (all_reduce_many, and raw MPI_Allreduce of the
// same bytes in one buffer), and overlap efficiency = (sequential - step) / min(compute, comm).
// Communication alone is measured again in every rep, compute is set from it (--compute-ratio),
// and step/max and step/seq are the medians of each rep's own ratios: the reference machine
// changes speed from minute to minute.
// Then the cost of wait() on small all-reduces: all_reduce_async + wait against all_reduce.
// --timeline adds, per model, the buckets' step of median time bucket by bucket on every rank
// (print_timeline).
//
//   mpiexec -n 2 bench_overlap [--model resnet50|bert-base|both] [--reps N] [--compute-ratio R]
//                              [--scale S] [--bucket-mb M] [--timeline] [--json FILE]
// Times are medians over --reps steps of the slowest rank; the data is checked after every step.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "mpidist/mpidist.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Model {
  std::string name;
  std::vector<std::size_t> shapes;  // parameter counts, in forward order
};

// ResNet-50 (torchvision): 53 convolutions (4 of them downsamples) each followed by a batch norm
// (weight, bias), and the classifier (weight, bias): 161 tensors, 25.6 M parameters.
Model resnet50() {
  Model m{"resnet50", {}};
  auto conv = [&](std::size_t out, std::size_t in, std::size_t k) {
    m.shapes.push_back(out * in * k * k);
    m.shapes.push_back(out);  // bn weight
    m.shapes.push_back(out);  // bn bias
  };
  conv(64, 3, 7);
  std::size_t in = 64;
  const std::size_t blocks[] = {3, 4, 6, 3};
  const std::size_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (std::size_t b = 0; b < blocks[stage]; ++b) {
      const std::size_t w = widths[stage];
      conv(w, in, 1);
      conv(w, w, 3);
      conv(w * 4, w, 1);
      if (b == 0) conv(w * 4, in, 1);  // downsample
      in = w * 4;
    }
  }
  m.shapes.push_back(1000 * 2048);
  m.shapes.push_back(1000);
  return m;
}

// BERT-base (uncased): embeddings (word, position, token type, layer norm), 12 layers of 16 tensors,
// the pooler: 199 tensors, 109.5 M parameters.
Model bert_base() {
  Model m{"bert-base", {30522 * 768, 512 * 768, 2 * 768, 768, 768}};
  for (int layer = 0; layer < 12; ++layer) {
    for (int qkv = 0; qkv < 3; ++qkv) m.shapes.insert(m.shapes.end(), {768 * 768, 768});
    m.shapes.insert(m.shapes.end(), {768 * 768, 768, 768, 768});      // attention output, layer norm
    m.shapes.insert(m.shapes.end(), {3072 * 768, 3072, 768 * 3072, 768, 768, 768});  // feed-forward, layer norm
  }
  m.shapes.insert(m.shapes.end(), {768 * 768, 768});
  return m;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double slowest(double mine) {
  double all = mine;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, mpidist::communicator());
  return all;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Gradients {
  std::vector<std::vector<float>> tensors;
  std::vector<mpidist::BufferView> views;  // forward order
  std::size_t parameters = 0;

  Gradients(const Model& model, double scale) {
    for (const std::size_t n : model.shapes) {
      tensors.emplace_back(std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(n) * scale)));
      parameters += tensors.back().size();
    }
    for (auto& t : tensors) views.emplace_back(std::span(t));
  }
  void fill() {
    const auto v = static_cast<float>(mpidist::rank() + 1);
    for (auto& t : tensors) std::fill(t.begin(), t.end(), v);
  }
  // Every element is the mean of 1..size after an Avg reduction.
  bool averaged() const {
    const int n = mpidist::world_size();
    const float want = static_cast<float>(n + 1) / 2.0f;
    for (const auto& t : tensors)
      if (t.front() != want || t.back() != want) return false;
    return true;
  }
};

// Backward, layer by layer from the last, each taking its share of `compute` seconds by its
// parameter count; `produced(i)` after each. Sleeps until a running deadline, so the total is
// `compute` however coarse each sleep is.
template <class F>
void backward(const Gradients& g, double compute, F&& produced) {
  const auto start = Clock::now();
  double done = 0;
  for (std::size_t i = g.tensors.size(); i-- > 0;) {
    done += compute * static_cast<double>(g.tensors[i].size()) / static_cast<double>(g.parameters);
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(done)));
    produced(i);
  }
}

struct Row {
  std::string model, mode;
  double step = 0, compute = 0, comm = 0, sequential = 0, raw_mpi = 0;
  // Medians of each rep's own ratios: a rep's step against that rep's compute, communication and
  // sequential step, so that a machine whose speed changes between reps still compares like with like.
  double step_over_max = 0, step_over_sequential = 0;
  double efficiency() const {
    const double hidden = std::min(compute, comm);
    return hidden > 0 ? (sequential - step) / hidden : 0.0;
  }
};

double micros(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

// One buckets step as this rank saw it, µs since the step's start: per bucket marked, launched,
// started, finished; then backward's end, wait() called, reduced, checked, the step's end.
std::vector<double> flatten(const mpidist::BucketsTimeline& line, Clock::time_point start, Clock::time_point backward_end,
                            Clock::time_point end) {
  std::vector<double> us;
  for (const auto& b : line.buckets)
    for (const auto t : {b.marked, b.launched, b.started, b.finished}) us.push_back(micros(start, t));
  for (const auto t : {backward_end, line.wait_called, line.reduced, line.checked, end}) us.push_back(micros(start, t));
  return us;
}

// --timeline: the buckets' step of median time, bucket by bucket on every rank, µs since the
// step's start. `alone` is that bucket's all_reduce_many by itself (blocking, no compute; the
// median over the reps, slowest rank); `late` how long the lane started it after it could have
// (marked, and the bucket before finished); `ideal` the step if every bucket had started as soon as
// it could and taken its time alone.
void print_timeline(const std::string& model, const mpidist::GradientBuckets& buckets, std::size_t buffers,
                    const std::vector<double>& alone, const std::vector<double>& mine, double step_us) {
  const auto ranks = static_cast<std::size_t>(mpidist::world_size());
  std::vector<double> all(mine.size() * ranks);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
             MPI_DOUBLE, 0, mpidist::communicator());
  if (mpidist::rank() != 0) return;
  const auto& line = buckets.last_step();
  const auto& starts = buckets.bucket_starts();
  const std::size_t n = starts.size();
  std::printf("\n# timeline: %s, GradientBuckets, the step of median time (%.0f us, slowest rank), us since its start\n",
              model.c_str(), step_us);
  std::printf("%-4s %-6s %7s %8s %9s %9s %9s %9s %9s %9s %8s %8s\n", "rank", "bucket", "tensors", "MiB", "marked",
              "launched", "started", "finished", "reduce_us", "alone_us", "x_alone", "late_us");
  for (std::size_t r = 0; r < ranks; ++r) {
    const double* us = all.data() + r * mine.size();
    double previous = 0, ideal = 0;
    for (std::size_t b = 0; b < n; ++b) {
      const double* t = us + 4 * b;  // marked, launched, started, finished
      const std::size_t tensors = (b + 1 < n ? starts[b + 1] : buffers) - starts[b];
      const double reduce = t[3] - t[2];
      std::printf("%-4zu %-6zu %7zu %8.2f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %8.2f %8.0f\n", r, b, tensors,
                  static_cast<double>(line.buckets[b].bytes) / (1 << 20), t[0], t[1], t[2], t[3], reduce, alone[b],
                  reduce / alone[b], t[2] - std::max(t[0], previous));
      previous = t[3];
      ideal = std::max(ideal, t[0]) + alone[b];
    }
    const double* e = us + 4 * n;  // backward's end, wait() called, reduced, checked, end
    std::printf("rank %zu: backward ended %.0f, wait() %.0f, reduced %.0f, checked %.0f (+%.0f), step %.0f; ideal %.0f "
                "(step - ideal %.0f us)\n",
                r, e[0], e[1], e[2], e[3], e[3] - e[2], e[4], ideal, e[4] - ideal);
  }
}

std::vector<Row> run_model(const Model& model, int reps, double ratio, double scale, std::size_t bucket_bytes,
                           bool timeline) {
  Gradients g(model, scale);
  std::vector<double> comm, raw, compute_alone, seq, per_tensor, bucketed, whole, comm_in_rep;
  const auto check = [&](const char* what) {
    if (!g.averaged()) {
      std::fprintf(stderr, "bench_overlap: %s on rank %d: wrong result\n", what, mpidist::rank());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  };
  // Communication alone, mpidist and raw MPI interleaved (a flat buffer of the same bytes).
  std::vector<float> flat(g.parameters);
  for (int r = 0; r < reps + 1; ++r) {
    g.fill();
    mpidist::barrier();
    auto t = Clock::now();
    mpidist::all_reduce_many(g.views, mpidist::ReduceOp::Avg);
    if (r > 0) comm.push_back(slowest(seconds_since(t)));
    check("all_reduce_many");
    mpidist::barrier();
    t = Clock::now();
    MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(flat.size()), MPI_FLOAT, MPI_SUM, mpidist::communicator());
    if (r > 0) raw.push_back(slowest(seconds_since(t)));
  }
  // Backward is chosen near the communication time: at first from the runs above, then in every
  // rep from that rep's own communication alone, so that a rep after the machine changed speed
  // still compares compute and communication at the ratio asked for.
  double compute = median(comm) * ratio;
  // GradientBuckets takes the gradients in the order backward produces them: the last layer's first.
  const std::vector<mpidist::BufferView> produced(g.views.rbegin(), g.views.rend());
  mpidist::GradientBuckets buckets(produced, {.bucket_bytes = bucket_bytes, .op = mpidist::ReduceOp::Avg});
  mpidist::GradientBuckets at_last_mark(produced,
                                        {.bucket_bytes = bucket_bytes, .op = mpidist::ReduceOp::Avg, .stream = false});
  const std::size_t last = g.views.size() - 1;
  std::vector<mpidist::Work> works;
  works.reserve(g.views.size());
  // --timeline: each step's buckets as flatten() gives them, and each bucket alone.
  std::vector<std::vector<double>> lines;
  std::vector<std::vector<double>> alone(buckets.bucket_count());
  for (int r = 0; r < reps + 1; ++r) {
    g.fill();  // communication alone again, in every rep: the machine's speed may have changed
    mpidist::barrier();
    auto t = Clock::now();
    mpidist::all_reduce_many(g.views, mpidist::ReduceOp::Avg);
    const double comm_now = slowest(seconds_since(t));
    if (r > 0) comm_in_rep.push_back(comm_now), compute = comm_now * ratio;
    check("all_reduce_many");

    mpidist::barrier();
    t = Clock::now();
    backward(g, compute, [](std::size_t) {});
    if (r > 0) compute_alone.push_back(slowest(seconds_since(t)));

    g.fill();
    mpidist::barrier();
    t = Clock::now();
    backward(g, compute, [](std::size_t) {});
    mpidist::all_reduce_many(g.views, mpidist::ReduceOp::Avg);
    if (r > 0) seq.push_back(slowest(seconds_since(t)));
    check("sequential");

    g.fill();
    mpidist::barrier();
    t = Clock::now();
    backward(g, compute, [&](std::size_t i) {
      works.push_back(mpidist::all_reduce_async(g.views[i], mpidist::ReduceOp::Avg));
    });
    mpidist::wait_all(works);
    works.clear();
    if (r > 0) per_tensor.push_back(slowest(seconds_since(t)));
    check("per-tensor");

    g.fill();
    mpidist::barrier();
    t = Clock::now();
    backward(g, compute, [&](std::size_t i) { at_last_mark.mark_ready(last - i); });
    at_last_mark.wait();
    if (r > 0) whole.push_back(slowest(seconds_since(t)));
    check("buckets at the last mark");

    g.fill();
    mpidist::barrier();
    t = Clock::now();
    backward(g, compute, [&](std::size_t i) { buckets.mark_ready(last - i); });
    const auto backward_end = Clock::now();
    buckets.wait();
    const auto end = Clock::now();
    if (r > 0) bucketed.push_back(slowest(seconds_since(t)));
    check("buckets");
    if (!timeline || r == 0) continue;
    lines.push_back(flatten(buckets.last_step(), t, backward_end, end));
    const auto& starts = buckets.bucket_starts();
    for (std::size_t b = 0; b < starts.size(); ++b) {
      const std::size_t to = b + 1 < starts.size() ? starts[b + 1] : produced.size();
      mpidist::barrier();
      t = Clock::now();
      mpidist::all_reduce_many(std::span(produced).subspan(starts[b], to - starts[b]), mpidist::ReduceOp::Avg);
      alone[b].push_back(slowest(seconds_since(t)) * 1e6);
    }
  }
  if (timeline) {
    // The step of median time: the same index on every rank (the times are the slowest rank's).
    std::vector<std::size_t> order(bucketed.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bucketed[a] < bucketed[b]; });
    const std::size_t pick = order[order.size() / 2];
    std::vector<double> alone_us;
    for (const auto& a : alone) alone_us.push_back(median(a));
    print_timeline(model.name, buckets, produced.size(), alone_us, lines[pick], bucketed[pick] * 1e6);
  }
  Row base{model.name, "", 0, median(compute_alone), median(comm_in_rep), median(seq), median(raw)};
  std::vector<Row> rows;
  for (const auto& [mode, times] : {std::pair<const char*, const std::vector<double>*>{"sequential", &seq},
                                    {"per-tensor async", &per_tensor}, {"buckets last mark", &whole},
                                    {"buckets", &bucketed}}) {
    Row row = base;
    row.mode = mode;
    row.step = median(*times);
    std::vector<double> over_max, over_sequential;
    for (std::size_t i = 0; i < times->size(); ++i) {
      over_max.push_back((*times)[i] / std::max(compute_alone[i], comm_in_rep[i]));
      over_sequential.push_back((*times)[i] / seq[i]);
    }
    row.step_over_max = median(over_max);
    row.step_over_sequential = median(over_sequential);
    rows.push_back(row);
  }
  return rows;
}

struct Latency {
  std::size_t bytes;
  double blocking_us, async_us;
};

// all_reduce_async + wait against all_reduce, interleaved in blocks, medians of blocks.
std::vector<Latency> small_latency(int iters) {
  std::vector<Latency> out;
  for (const std::size_t bytes : {std::size_t{4}, std::size_t{64}, std::size_t{1024}}) {
    std::vector<float> v(bytes / sizeof(float), 1.0f);
    std::vector<double> blocking, async;
    for (int block = 0; block < 11; ++block) {
      mpidist::barrier();
      auto t = Clock::now();
      for (int i = 0; i < iters; ++i) mpidist::all_reduce(std::span(v), mpidist::ReduceOp::Max);
      blocking.push_back(slowest(seconds_since(t)) / iters * 1e6);
      mpidist::barrier();
      t = Clock::now();
      for (int i = 0; i < iters; ++i) mpidist::all_reduce_async(std::span(v), mpidist::ReduceOp::Max).wait();
      async.push_back(slowest(seconds_since(t)) / iters * 1e6);
    }
    out.push_back({bytes, median(blocking), median(async)});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  std::string which = "both", json;
  int reps = 5, iters = 2000;
  bool timeline = false;
  double ratio = 1.0, scale = 1.0, bucket_mb = 25.0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--model") which = next();
    else if (a == "--reps") reps = std::stoi(next());
    else if (a == "--iters") iters = std::stoi(next());
    else if (a == "--compute-ratio") ratio = std::stod(next());
    else if (a == "--scale") scale = std::stod(next());
    else if (a == "--json") json = next();
    else if (a == "--bucket-mb") bucket_mb = std::stod(next());
    else if (a == "--timeline") timeline = true;
    else {
      if (mpidist::rank() == 0) std::fprintf(stderr, "bench_overlap: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::vector<Model> models;
  if (which == "resnet50" || which == "both") models.push_back(resnet50());
  if (which == "bert-base" || which == "both") models.push_back(bert_base());
  std::vector<Row> rows;
  for (const auto& m : models)
    for (auto& r : run_model(m, reps, ratio, scale, static_cast<std::size_t>(bucket_mb * (1 << 20)), timeline))
      rows.push_back(r);
  const auto latency = small_latency(iters);
  if (mpidist::rank() != 0) return 0;
  std::printf("# bench_overlap: %d ranks, %d node(s), reps %d, compute = %.2f x comm, scale %.3g, buckets %.3g MiB\n",
              mpidist::world_size(), mpidist::num_nodes(), reps, ratio, scale, bucket_mb);
  std::printf("%-10s %-17s %9s %9s %9s %9s %9s %8s %8s %8s\n", "model", "mode", "step_ms", "compute", "comm",
              "raw_mpi", "seq", "step/max", "step/seq", "overlap");
  for (const auto& r : rows)
    std::printf("%-10s %-17s %9.1f %9.1f %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f\n", r.model.c_str(), r.mode.c_str(),
                r.step * 1e3, r.compute * 1e3, r.comm * 1e3, r.raw_mpi * 1e3, r.sequential * 1e3, r.step_over_max,
                r.step_over_sequential, r.efficiency());
  std::printf("\n%-8s %12s %12s %10s\n", "bytes", "blocking_us", "async_us", "delta_us");
  for (const auto& l : latency)
    std::printf("%-8zu %12.2f %12.2f %10.2f\n", l.bytes, l.blocking_us, l.async_us, l.async_us - l.blocking_us);
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\"ranks\": " << mpidist::world_size() << ", \"nodes\": " << mpidist::num_nodes() << ", \"reps\": " << reps
        << ", \"compute_ratio\": " << ratio << ", \"scale\": " << scale << ", \"bucket_mb\": " << bucket_mb
        << ", \"steps\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      out << (i ? ", " : "") << "{\"model\": \"" << r.model << "\", \"mode\": \"" << r.mode << "\", \"step_s\": " << r.step
          << ", \"compute_s\": " << r.compute << ", \"comm_s\": " << r.comm << ", \"raw_mpi_s\": " << r.raw_mpi
          << ", \"sequential_s\": " << r.sequential << ", \"step_over_max\": " << r.step_over_max
          << ", \"step_over_sequential\": " << r.step_over_sequential << ", \"overlap_efficiency\": " << r.efficiency()
          << "}";
    }
    out << "], \"small_all_reduce\": [";
    for (std::size_t i = 0; i < latency.size(); ++i)
      out << (i ? ", " : "") << "{\"bytes\": " << latency[i].bytes << ", \"blocking_us\": " << latency[i].blocking_us
          << ", \"async_us\": " << latency[i].async_us << "}";
    out << "]}\n";
  }
  return 0;
}
