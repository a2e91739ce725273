// Progress of a long sweep on stderr.
#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "bench.hpp"
#include "mpidist/topology.hpp"

namespace bench {

// Below this expected length a sweep gets no estimate: it is over before one would help.
constexpr double estimate_after_seconds = 60;

Progress::Progress(std::vector<std::size_t> steps, std::string op, bool enabled, std::ostream& err)
    : steps_(std::move(steps)), op_(std::move(op)), enabled_(enabled), err_(err),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::step_done(std::size_t bytes) {
  const auto now = std::chrono::steady_clock::now();
  done_bytes_.push_back(bytes);
  done_seconds_.push_back(std::chrono::duration<double>(now - last_).count());
  last_ = now;
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::size_t done = done_bytes_.size();
  const std::vector<std::size_t> left(steps_.begin() + static_cast<std::ptrdiff_t>(std::min(done, steps_.size())),
                                      steps_.end());
  const double remaining = estimate_left(done_bytes_, done_seconds_, left);
  char line[160];
  std::snprintf(line, sizeof line, "mpidist-bench: %s %zu/%zu done (%s), %.1f s elapsed", op_.c_str(), done,
                steps_.size(), format_size(bytes).c_str(), elapsed);
  err_ << line;
  if (!left.empty() && elapsed + remaining > estimate_after_seconds) {
    std::snprintf(line, sizeof line, ", about %.0f s left", remaining);
    err_ << line;
  }
  err_ << std::endl;
}

double Progress::estimate_left(const std::vector<std::size_t>& done_bytes, const std::vector<double>& done_seconds,
                               const std::vector<std::size_t>& left_bytes) {
  if (done_bytes.empty() || left_bytes.empty()) return 0;
  const double n = static_cast<double>(done_bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < done_bytes.size(); ++i) {
    const double x = static_cast<double>(done_bytes[i]), y = done_seconds[i];
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double spread = n * sxx - sx * sx;
  // One size seen so far (or all the same): every step is taken to cost the mean.
  const double b = spread > 0 ? std::max(0.0, (n * sxy - sx * sy) / spread) : 0;
  const double a = (sy - b * sx) / n;
  double total = 0;
  for (const std::size_t bytes : left_bytes) total += std::max(0.0, a + b * static_cast<double>(bytes));
  return total;
}

// A rank cannot see mpiexec's own stdout: Open MPI hands it a pty even when the job's output goes
// to a file, and a pipe for stderr; Hydra pipes for both. So the table is taken to reach a
// terminal only where stdout and stderr both are one: a process started by hand in a shell.
bool progress_wanted() {
  return mpidist::rank() == 0 && !(isatty(STDOUT_FILENO) != 0 && isatty(STDERR_FILENO) != 0);
}

}  // namespace bench
