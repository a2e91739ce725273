// mpidist-bench: nccl-tests-style benchmark of mpidist's collectives with raw MPI (and raw NCCL)
// side by side in the same run.
//   mpiexec -n 2 mpidist-bench all_reduce -b 8 -e 256M -f 2 --json ar.json
#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "bench.hpp"
#include "mpidist/environment.hpp"
#include "mpidist/topology.hpp"
#include "raw_mpi.hpp"
#include "report.hpp"
#include "runner.hpp"

int main(int argc, char** argv) {
  // --backend and --threads go to the library the way a user would choose them, before initialization.
  auto level = mpidist::ThreadLevel::Funneled;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string_view(argv[i]) == "--backend") setenv("MPIDIST_BACKEND", argv[i + 1], 1);
    if (std::string_view(argv[i]) == "--threads" && std::string_view(argv[i + 1]) == "multiple")
      level = mpidist::ThreadLevel::Multiple;
  }
  mpidist::Environment env(argc, argv, level);
  const bool main_rank = mpidist::rank() == 0;
  std::optional<bench::Options> options;
  try {
    options = bench::parse_options(argc, argv);
  } catch (const std::invalid_argument& e) {
    // Every rank parsed the same arguments, so every rank leaves here together.
    if (main_rank) std::cerr << "mpidist-bench: " << e.what() << "\n" << bench::usage();
    return 2;
  }
  if (!options) {
    if (main_rank) std::cout << bench::usage();
    return 0;
  }
  const bench::OpHooks& op = *bench::find_op(options->op);
  bench::SweepOutcome outcome;
  try {
    outcome = bench::run_sweep(op, *options, std::cout);
  } catch (const std::invalid_argument& e) {
    // Raised before any collective, from values every rank shares.
    if (main_rank) std::cerr << "mpidist-bench: " << e.what() << "\n";
    return 2;
  }
  bench::free_raw_mpi_ops();
  if (!main_rank) return 0;
  bench::print_footer(std::cout, op, outcome.results, outcome.raw_wrong);
  try {
    if (!options->json_path.empty()) bench::write_file(options->json_path, bench::to_json(outcome.info, outcome.results));
    if (!options->csv_path.empty()) bench::write_file(options->csv_path, bench::to_csv(outcome.info, outcome.results));
    if (!options->compare_path.empty()) bench::print_compare(std::cout, options->compare_path, outcome.info, outcome.results);
  } catch (const std::runtime_error& e) {
    std::cerr << "mpidist-bench: " << e.what() << "\n";
    return 2;
  }
  std::size_t wrong = outcome.raw_wrong;
  for (const bench::Result& r : outcome.results) wrong += r.wrong;
  return wrong == 0 ? 0 : 1;
}
