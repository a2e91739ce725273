// The main-process guards at work: run it with `mpiexec -n 4 ./guards-example`.
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "mpidist/mpidist.hpp"

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);
  const mpidist::Logger log("example", /*all_ranks=*/true);
  log.info("local rank ", mpidist::local_rank(), " of ", mpidist::local_size(), " on node ", mpidist::node_rank(),
           " of ", mpidist::num_nodes(), " (", mpidist::hostname(), ")");
  mpidist::barrier();

  // Rank 0 writes the vocabulary; every rank reads it once it exists.
  const char* path = "/tmp/mpidist-guards-example.txt";
  mpidist::run_on_main([&] { std::ofstream(path) << "hello distributed world\n"; },
                       [&] {
                         std::string line;
                         std::getline(std::ifstream(path) >> std::ws, line);
                         log.info("read after main finished: ", line);
                       },
                       /*run_post_on_main=*/true);

  // The dataset is prepared on rank 0 first, then the others find it cached.
  {
    auto first = mpidist::zero_first();
    log.info(mpidist::is_main_process() ? "preparing the dataset cache" : "using the cached dataset");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // Only rank 0 reports; everyone else gets std::nullopt.
  auto checkpoint = mpidist::main_process_only([](int step) { return "checkpoint-" + std::to_string(step) + ".bin"; });
  if (auto name = checkpoint(100)) mpidist::logger().info("saved ", *name);

  // An exception on the main process reaches every rank as mpidist::Error instead of a hang.
  try {
    mpidist::run_on_main([] { throw std::runtime_error("download failed"); });
  } catch (const mpidist::Error& e) {
    log.info("every rank sees: ", e.detail());
  }
  return 0;
}
