// GoogleTest under mpiexec: every rank runs every test; a failure on any rank fails the test on
// rank 0, which alone prints and writes the XML report.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "mpidist/error.hpp"

namespace mpidist_test {

/// Base fixture for tests that run on every rank. Its TearDown collects the failures of all ranks
/// and reports those of the other ranks on rank 0, so "any failing rank fails the test" holds.
class MpiTest : public ::testing::Test {
 protected:
  void TearDown() override;
};

/// Runs the registered tests on every rank of an initialized MPI; rank 0 alone prints and writes
/// the XML report. Returns non-zero on every rank when any rank failed.
int run_all_tests(int& argc, char** argv);

/// Runs `call` and expects mpidist::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& call, std::initializer_list<std::string> parts) {
  try {
    call();
    ADD_FAILURE() << "no mpidist::Error thrown (expected one mentioning '" << *parts.begin() << "')";
  } catch (const mpidist::Error& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

/// Runs `command` through the shell with a time limit; returns its exit status, output and how
/// long it ran.
struct CommandResult {
  int exit_code;
  std::string output;
  double seconds = 0;
};
CommandResult run_command(const std::string& command, int timeout_seconds = 60);
/// Whether `text` occurs in the command's output.
bool has(const CommandResult& result, const std::string& text);
/// Runs the probe program that the test's environment variable `variable` names, with `args`, at
/// `ranks` under mpiexec_prefix, with `env` ("A=1 B=2") set and validation off unless `env` turns
/// it on (the sanitizer and MPICH runs set MPIDIST_VALIDATE=1 for the whole suite, and the
/// per-call agreement would report a missing rank before the watchdog the probes test).
CommandResult run_probe(const char* variable, int ranks, const std::string& args, const std::string& env,
                        int timeout_seconds);

/// Whether the tests run under MPICH's Hydra (MPIDIST_TEST_MPI=mpich) rather than Open MPI.
bool under_mpich();

/// "mpiexec -n RANKS ", for nested jobs: the build's mpiexec (MPIDIST_TEST_MPIEXEC), with the
/// variables that let Open MPI run as root and oversubscribed where it is Open MPI's.
std::string mpiexec_prefix(int ranks);

/// The mpiexec option that sets NAME=VALUE for the ranks of one program of an MPMD line
/// (`-x NAME=VALUE` for Open MPI, `-env NAME VALUE` for MPICH's Hydra), with a trailing space.
std::string mpiexec_env(const std::string& name, const std::string& value);

}  // namespace mpidist_test
