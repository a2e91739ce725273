#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "mpi_test.hpp"
#include "mpidist/mpidist.hpp"

namespace mpidist_test {
namespace {

// This rank's failure messages for the running test, handed to rank 0 in TearDown.
std::string g_failures;

class FailureRecorder : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { g_failures.clear(); }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::ostringstream line;
    line << (result.file_name() ? result.file_name() : "?") << ":" << result.line_number() << ": "
         << result.message() << "\n";
    g_failures += line.str();
  }
};

}  // namespace

void MpiTest::TearDown() {
  // Suites that start and stop mpidist themselves fall back to the world.
  const MPI_Comm comm = mpidist::is_initialized() ? mpidist::communicator() : MPI_COMM_WORLD;
  int size = 0, me = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &me);
  int length = static_cast<int>(g_failures.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  std::vector<int> offsets(lengths.size(), 0);
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<std::size_t>(me == 0 ? total : 0), '\0');
  MPI_Gatherv(g_failures.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm);
  if (me != 0) return;
  for (int r = 1; r < size; ++r) {
    const auto n = static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]);
    if (n > 0)
      ADD_FAILURE() << "rank " << r << " failed:\n" << all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]), n);
  }
}

CommandResult run_command(const std::string& command, int timeout_seconds) {
  std::string quoted = "'";
  for (const char c : command) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  const std::string full = "timeout -k 5 " + std::to_string(timeout_seconds) + " sh -c " + quoted + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), static_cast<int>(chunk.size()), pipe) != nullptr) output += chunk.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

bool has(const CommandResult& result, const std::string& text) {
  return result.output.find(text) != std::string::npos;
}

CommandResult run_probe(const char* variable, int ranks, const std::string& args, const std::string& env,
                        int timeout_seconds) {
  const char* path = std::getenv(variable);
  const std::string program = path != nullptr ? path : std::string("missing-") + variable;
  return run_command("env MPIDIST_VALIDATE=0 " + env + " " + mpiexec_prefix(ranks) + program + " " + args,
                     timeout_seconds);
}

bool under_mpich() {
  const char* mpi = std::getenv("MPIDIST_TEST_MPI");
  return mpi != nullptr && std::string(mpi) == "mpich";
}

std::string mpiexec_prefix(int ranks) {
  const char* mpiexec = std::getenv("MPIDIST_TEST_MPIEXEC");
  const std::string program = mpiexec != nullptr ? mpiexec : "mpiexec";
  if (under_mpich()) return program + " -n " + std::to_string(ranks) + " ";
  // meson test's MALLOC_PERTURB_ goes to the ranks only: with it Open MPI 4.1's mpiexec itself
  // segfaults now and then while it logs a rank's MPI_Abort, losing the ranks' last output
  // (tests/hosts/cluster.sh).
  const char* perturb = std::getenv("MALLOC_PERTURB_");
  const std::string launcher = perturb != nullptr && *perturb != '\0'
                                   ? "env -u MALLOC_PERTURB_ " + program + " " + mpiexec_env("MALLOC_PERTURB_", perturb)
                                   : program + " ";
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
         "OMPI_MCA_mpi_yield_when_idle=1 " + launcher + "-n " + std::to_string(ranks) + " ";
}

std::string mpiexec_env(const std::string& name, const std::string& value) {
  return under_mpich() ? "-env " + name + " " + value + " " : "-x " + name + "=" + value + " ";
}

int run_all_tests(int& argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  listeners.Append(new FailureRecorder);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    // Only rank 0 prints and writes the report; the others' failures reach it in TearDown.
    delete listeners.Release(listeners.default_result_printer());
    delete listeners.Release(listeners.default_xml_generator());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any_failed;
}

}  // namespace mpidist_test

