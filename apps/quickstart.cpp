// The README's example, built and run by the tests (mpiexec -n 2) so that it stays true.
#include <fstream>
#include <mpidist/mpidist.hpp>

int main(int argc, char** argv) {
  mpidist::Environment env(argc, argv);  // MPI up, topology known; a stray exception aborts the job
  mpidist::Logger log("train");          // "[rank 0/4] INFO train: ..." on the main process only
  log.info(mpidist::world_size(), " ranks on ", mpidist::num_nodes(), " node(s)");

  mpidist::run_on_main([] { std::ofstream("/tmp/mpidist-vocab.txt") << "hello world\n"; });  // others wait
  auto config = mpidist::compute_and_broadcast([] {  // rank 0 decides, everyone gets it
    return std::map<std::string, std::string>{{"model", "linear"}, {"lr", "0.1"}};
  });
  { auto first = mpidist::zero_first(); /* rank 0 fills a cache first, then the others read it */ }

  std::vector<float> grad(1024, static_cast<float>(mpidist::rank()));
  mpidist::all_reduce(grad, mpidist::ReduceOp::Avg);  // in place, as torch.distributed.all_reduce
  const auto losses = mpidist::all_gather(0.5 * mpidist::rank());  // one value per rank
  const auto worst = mpidist::all_reduce(losses.back(), mpidist::ReduceOp::Max);

  mpidist::main_process_only([&] { log.info(config["model"], ": mean grad ", grad[0], ", worst loss ", worst); })();
  return 0;
}
