// A two-stage pipeline: ranks come in pairs, stage 0 (even ranks) computes activations and sends
// them to stage 1 (the next rank), which finishes the forward pass and sends the gradient of its
// input back. Micro-batches overlap: stage 0 posts the next send before it waits for the last
// gradient. Ends with the loss of every pair, gathered on rank 0.
//
//   mpiexec -n 4 ./build/apps/pipeline      (2 pairs; an odd last rank sits out)
#include <cmath>
#include <vector>

#include <mpidist/mpidist.hpp>

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  mpidist::Logger log("pipeline");
  const auto world = mpidist::world();
  const int me = world.rank();
  const bool in_pair = me + 1 < world.size() || me % 2 == 1;
  // One communicator per pair: the stages are ranks 0 and 1 in it.
  const auto pair = world.split(in_pair ? me / 2 : mpidist::Communicator::undefined, me);
  constexpr int micro_batches = 8;
  constexpr std::size_t width = 4096;
  double loss = 0;
  if (pair) {
    const int stage = pair.rank();
    std::vector<float> weights(width, 0.5f + 0.01f * static_cast<float>(me));
    std::vector<std::vector<float>> activations(micro_batches, std::vector<float>(width));
    std::vector<float> gradient(width);
    for (int step = 0; step < 3; ++step) {
      if (stage == 0) {
        std::vector<mpidist::Work> sends;
        for (int m = 0; m < micro_batches; ++m) {
          for (std::size_t i = 0; i < width; ++i)
            activations[m][i] = weights[i] * static_cast<float>(std::sin(0.001 * static_cast<double>(i + m)));
          sends.push_back(mpidist::isend(pair, std::span(activations[m]), 1, m));  // tag: the micro-batch
        }
        for (int m = 0; m < micro_batches; ++m) {
          mpidist::recv(pair, std::span(gradient), 1, m);
          for (std::size_t i = 0; i < width; ++i) weights[i] -= 0.01f * gradient[i];
        }
        mpidist::wait_all(sends);
      } else {
        loss = 0;
        for (int m = 0; m < micro_batches; ++m) {
          mpidist::recv(pair, std::span(activations[m]), 0, m);
          for (std::size_t i = 0; i < width; ++i) {
            const float out = activations[m][i] * weights[i];
            loss += 0.5 * out * out / (width * micro_batches);
            gradient[i] = out * weights[i] / static_cast<float>(micro_batches);
          }
          mpidist::send(pair, std::span(gradient), 0, m);
        }
      }
    }
  }
  // Stage 1 of each pair knows its pair's loss; rank 0 gathers them all.
  const auto losses = mpidist::gather(loss, 0);
  if (losses) {
    for (int r = 1; r < world.size(); r += 2)
      log.info("pair of ranks ", r - 1, " and ", r, ": loss ", (*losses)[static_cast<std::size_t>(r)]);
  }
  return 0;
}
