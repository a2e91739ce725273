// mpidist::Error: the one exception type the library throws.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace mpidist {

/// Raised by every mpidist function that fails: bad arguments, MPI/CUDA/NCCL failures, failures
/// of another rank that this rank learned about. The message reads
/// `mpidist: [rank 2/4 on host] broadcast on world: root 7 out of range for world size 4`
/// (world rank and size, host name, the operation, the communicator's name, what went wrong).
class Error : public std::runtime_error {
 public:
  /// `operation` names the public function (or internal step) that failed; `detail` says what
  /// was wrong, including the offending values. The rank is filled in from the environment
  /// (-1 before initialization).
  Error(std::string operation, std::string detail);
  /// The same for a call on the communicator named `communicator` (Communicator::name()).
  Error(std::string communicator, std::string operation, std::string detail);

  /// The world rank that raised the error, or -1 when mpidist was not initialized.
  int rank() const noexcept { return rank_; }
  /// The operation that failed, e.g. "broadcast" or "MPI_Allreduce".
  const std::string& operation() const noexcept { return operation_; }
  /// What went wrong, without the rank prefix.
  const std::string& detail() const noexcept { return detail_; }
  /// The communicator of the failed call ("world", "group{0,2}"), or "" when none applies.
  const std::string& communicator() const noexcept { return communicator_; }

 private:
  Error(std::string communicator, std::string operation, std::string detail, int rank);
  int rank_;
  std::string communicator_;
  std::string operation_;
  std::string detail_;
};

namespace detail {
/// Runs `fn`; an Error escaping it that names no communicator is rethrown naming `communicator`,
/// so the layers below a collective need not carry the name to every throw.
template <class F>
decltype(auto) naming_errors(const std::string& communicator, F&& fn) {
  try {
    return std::forward<F>(fn)();
  } catch (const Error& e) {
    if (!e.communicator().empty()) throw;
    throw Error(communicator, e.operation(), e.detail());
  }
}
}  // namespace detail

}  // namespace mpidist
