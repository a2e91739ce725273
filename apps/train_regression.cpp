// Data-parallel training in one file: linear regression by mini-batch SGD, the way a PyTorch
// DistributedDataParallel job does it, on mpidist.
//
//   mpiexec -n 4 ./train-regression --epochs 20 --checkpoint /tmp/regression.txt
//
// 1. Every rank builds its shard of a synthetic dataset (no files, no communication).
// 2. Rank 0 draws the initial weights and broadcasts them, so all replicas start equal.
// 3. Each step, every rank computes the gradient on its slice of the global batch and marks its
//    parts ready in a GradientBuckets (DDP's reducer), which averages them over the ranks while
//    the rest of backward would still run; wait() leaves the gradient of the whole batch, so the
//    replicas stay equal.
// 4. Rank 0 reports progress; the main process alone writes the checkpoint.
// The global batch is the same for any number of ranks, so 1, 2 or 4 ranks reach the same weights.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpidist/mpidist.hpp"

namespace {

constexpr int features = 8;
constexpr std::size_t samples = 4096;    // the whole dataset
constexpr std::size_t global_batch = 64; // split evenly over 1, 2, 4 or 8 ranks

struct Options {
  int epochs = 20;
  float learning_rate = 0.05f;
  std::string checkpoint;  // written on the main process when set
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--epochs") options.epochs = std::atoi(argv[i + 1]);
    else if (flag == "--lr") options.learning_rate = std::strtof(argv[i + 1], nullptr);
    else if (flag == "--checkpoint") options.checkpoint = argv[i + 1];
    else throw std::runtime_error("unknown option " + flag + " (use --epochs N, --lr X, --checkpoint FILE)");
  }
  return options;
}

// Sample i of the dataset, the same on every rank: y = x . true_weights + 0.5 + noise.
struct Sample {
  float x[features];
  float y;
};
Sample make_sample(std::size_t i) {
  std::mt19937 random(static_cast<std::uint32_t>(i) * 2654435761u + 17u);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Sample s{};
  s.y = 0.5f;
  for (int f = 0; f < features; ++f) {
    s.x[f] = normal(random);
    s.y += s.x[f] * (static_cast<float>(f) - 3.5f) / 4.0f;  // true weights -0.875 .. 0.875
  }
  s.y += 0.01f * normal(random);
  return s;
}

// Rank r owns the samples at positions [r*b, (r+1)*b) of every global batch, b = batch / ranks
// (DistributedSampler-style interleaving, so a global batch means the same samples for any rank count).
std::vector<Sample> my_shard() {
  const auto ranks = static_cast<std::size_t>(mpidist::world_size());
  const std::size_t local_batch = global_batch / ranks;
  const std::size_t first = static_cast<std::size_t>(mpidist::rank()) * local_batch;
  std::vector<Sample> shard;
  for (std::size_t start = 0; start < samples; start += global_batch)
    for (std::size_t j = 0; j < local_batch; ++j) shard.push_back(make_sample(start + first + j));
  return shard;
}

// Mean-squared-error gradient over `batch`, for weights w[0..features-1] and bias w[features].
// Returns the batch loss; writes the gradient into `gradient`.
float gradient_of(std::span<const Sample> batch, const std::vector<float>& w, std::vector<float>& gradient) {
  std::fill(gradient.begin(), gradient.end(), 0.0f);
  float loss = 0.0f;
  for (const Sample& s : batch) {
    float prediction = w[features];
    for (int f = 0; f < features; ++f) prediction += w[static_cast<std::size_t>(f)] * s.x[f];
    const float error = prediction - s.y;
    loss += error * error;
    for (int f = 0; f < features; ++f) gradient[static_cast<std::size_t>(f)] += 2.0f * error * s.x[f];
    gradient[features] += 2.0f * error;
  }
  const auto n = static_cast<float>(batch.size());
  for (float& g : gradient) g /= n;
  return loss / n;
}

}  // namespace

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  const Options options = parse(argc, argv);
  auto& log = mpidist::logger();  // rank-prefixed, main process only
  if (samples % global_batch != 0 || global_batch % static_cast<std::size_t>(mpidist::world_size()) != 0)
    throw mpidist::Error("train-regression", "the global batch of 64 must split evenly over the ranks");

  const std::vector<Sample> shard = my_shard();
  const std::size_t local_batch = global_batch / static_cast<std::size_t>(mpidist::world_size());

  // Initial weights: random on rank 0, then broadcast (the other ranks' values are overwritten).
  std::vector<float> weights(features + 1, 0.0f);
  if (mpidist::is_main_process()) {
    std::mt19937 random(2024);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& w : weights) w = uniform(random);
  }
  mpidist::broadcast(std::span(weights), 0);
  log.info("training on ", mpidist::world_size(), " rank(s), ", shard.size(), " samples each, backend ", mpidist::backend());

  // The gradients as a reducer sees them, in the order backward produces them: the bias's, then the
  // weights'. A bucket is averaged over the ranks as soon as all its gradients are marked ready.
  std::vector<float> gradient(features + 1);
  const std::span<float> parts(gradient);
  mpidist::GradientBuckets buckets({mpidist::BufferView(parts.last(1)), mpidist::BufferView(parts.first(features))},
                                   {.bucket_bytes = 25 << 20, .op = mpidist::ReduceOp::Avg});
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    float epoch_loss = 0.0f;
    for (std::size_t start = 0; start < shard.size(); start += local_batch) {
      epoch_loss += gradient_of(std::span(shard).subspan(start, local_batch), weights, gradient);
      buckets.mark_ready(0);  // in a deep model: after each layer's backward, while the next one computes
      buckets.mark_ready(1);
      buckets.wait();  // the whole batch's gradient
      for (std::size_t i = 0; i < weights.size(); ++i) weights[i] -= options.learning_rate * gradient[i];
    }
    // The mean loss over every rank's samples (virtex's average_across_processes).
    float loss[1] = {epoch_loss / static_cast<float>(shard.size() / local_batch)};
    mpidist::average(std::span(loss));
    log.info("epoch ", epoch, "/", options.epochs, "  loss ", loss[0]);
  }

  if (!options.checkpoint.empty()) {
    mpidist::run_on_main([&] {
      std::ofstream out(options.checkpoint);
      out << std::setprecision(9);
      for (float w : weights) out << w << '\n';
      if (!out) throw std::runtime_error("cannot write checkpoint '" + options.checkpoint + "'");
    });
    log.info("checkpoint written to ", options.checkpoint);
  }
  std::ostringstream final_weights;
  for (float w : weights) final_weights << ' ' << std::setprecision(6) << w;
  log.info("final weights:", final_weights.str());
  return 0;
}
