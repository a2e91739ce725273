// mpidist::Error: the one exception type the library throws.
#pragma once

#include <stdexcept>
#include <string>

namespace mpidist {

/// Raised by every mpidist function that fails: bad arguments, MPI/CUDA/NCCL failures, failures
/// of another rank that this rank learned about. The message reads
/// `mpidist: [rank 2/4 on host] broadcast: root 7 out of range for world size 4`.
class Error : public std::runtime_error {
 public:
  /// `operation` names the public function (or internal step) that failed; `detail` says what
  /// was wrong, including the offending values. The rank is filled in from the environment
  /// (-1 before initialization).
  Error(std::string operation, std::string detail);

  /// The world rank that raised the error, or -1 when mpidist was not initialized.
  int rank() const noexcept { return rank_; }
  /// The operation that failed, e.g. "broadcast" or "MPI_Allreduce".
  const std::string& operation() const noexcept { return operation_; }
  /// What went wrong, without the rank prefix.
  const std::string& detail() const noexcept { return detail_; }

 private:
  Error(std::string operation, std::string detail, int rank);
  int rank_;
  std::string operation_;
  std::string detail_;
};

}  // namespace mpidist
