#include "timeout.hpp"

#include <cstdlib>
#include <string>
#include <thread>

#include "mpi_check.hpp"
#include "mpidist/error.hpp"
#include "settings.hpp"

namespace mpidist::detail {

Deadline::Deadline(const char* operation) : seconds_(settings(operation).timeout_seconds) {
  end_ = std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds_));
}

bool Deadline::passed() const { return seconds_ > 0.0 && std::chrono::steady_clock::now() >= end_; }

void throw_timed_out(const char* operation, const Deadline& deadline, const char* what) {
  throw Error(operation, "timed out after " + std::to_string(static_cast<int>(deadline.seconds())) + " s waiting for " +
                             what + " (MPIDIST_TIMEOUT); a rank may have stopped calling collectives or died. The "
                             "communicator can no longer be used");
}

void wait_or_time_out(const char* operation, const Deadline& deadline, MPI_Request& request, const char* what) {
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    MPIDIST_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    // Reading the clock every poll would dominate small collectives; every 256th is plenty.
    if (polls % 256 == 255 && deadline.passed()) throw_timed_out(operation, deadline, what);
    std::this_thread::yield();  // ranks oversubscribing cores must let the others progress
  }
}

}  // namespace mpidist::detail
