#include "timeout.hpp"

#include <cstdlib>
#include <string>
#include <thread>

#include "mpi_check.hpp"
#include "mpidist/error.hpp"

namespace mpidist::detail {

double timeout_seconds(const char* operation) {
  const char* text = std::getenv("MPIDIST_TIMEOUT");
  if (text == nullptr || *text == '\0') return default_timeout_seconds;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*end != '\0' || !(value >= 0.0) || value > 1e9)
    throw Error(operation, std::string("MPIDIST_TIMEOUT must be a number of seconds >= 0, got '") + text + "'");
  return value;
}

Deadline::Deadline(const char* operation) : seconds_(timeout_seconds(operation)) {
  end_ = std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds_));
}

bool Deadline::passed() const { return seconds_ > 0.0 && std::chrono::steady_clock::now() >= end_; }

void wait_or_time_out(const char* operation, const Deadline& deadline, MPI_Request& request, const char* what) {
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    MPIDIST_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    // Reading the clock every poll would dominate small collectives; every 256th is plenty.
    if (polls % 256 == 255 && deadline.passed())
      throw Error(operation, "timed out after " + std::to_string(static_cast<int>(deadline.seconds())) +
                                 " s waiting for " + what + " (MPIDIST_TIMEOUT); a rank may have stopped calling "
                                 "collectives or died. The communicator can no longer be used");
    std::this_thread::yield();  // ranks oversubscribing cores must let the others progress
  }
}

}  // namespace mpidist::detail
