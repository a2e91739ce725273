// Progress of a long sweep on stderr, for runs whose table goes to a file or a pipe (a batch
// job's output): a line per size, and the time left once the sweep looks longer than a minute.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace bench {

class Progress {
 public:
  /// `steps`: the sizes the sweep will run, in order (repeated once per group size). Reports to
  /// `err` only if `enabled` (rank 0 with stdout not a terminal: see progress_wanted()).
  Progress(std::vector<std::size_t> steps, std::string op, bool enabled, std::ostream& err);

  /// The next step, of `bytes`, has finished: one line with the count, the size, the time so far,
  /// and an estimate of the time left when the whole sweep is expected to take over a minute.
  void step_done(std::size_t bytes);

  /// Seconds the remaining steps should take, from a least-squares line time = a + b * bytes
  /// through the finished steps (each size runs the same iterations, so time grows with bytes).
  static double estimate_left(const std::vector<std::size_t>& done_bytes, const std::vector<double>& done_seconds,
                              const std::vector<std::size_t>& left_bytes);

 private:
  std::vector<std::size_t> steps_;
  std::string op_;
  bool enabled_;
  std::ostream& err_;
  std::chrono::steady_clock::time_point start_, last_;
  std::vector<std::size_t> done_bytes_;
  std::vector<double> done_seconds_;
};

/// True on the rank that prints (rank 0) unless its stdout and stderr are both a terminal (under
/// a launcher they never both are, whatever mpiexec's own output is: progress is shown there).
bool progress_wanted();

}  // namespace bench
