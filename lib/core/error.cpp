// mpidist::Error: messages that name the rank, the communicator and the operation.
#include "mpidist/error.hpp"

#include <string>

#include "core/context.hpp"
#include "core/mpi_check.hpp"
#include "core/rank_prefix.hpp"

namespace mpidist {

namespace {
int current_rank() noexcept {
  const auto* ctx = detail::context_if_initialized();
  return ctx ? ctx->topology.rank : -1;
}

// "[rank 2/4 on node7] ": on a cluster the host tells where to look.
std::string error_prefix() {
  const auto* ctx = detail::context_if_initialized();
  if (ctx == nullptr) return "";
  const auto& t = ctx->topology;
  return "[rank " + std::to_string(t.rank) + "/" + std::to_string(t.world_size) + " on " + t.hostname + "] ";
}

std::string message(const std::string& communicator, const std::string& op, const std::string& what_went_wrong) {
  return "mpidist: " + error_prefix() + op + (communicator.empty() ? "" : " on " + communicator) + ": " +
         what_went_wrong;
}
}  // namespace

Error::Error(std::string op, std::string what_went_wrong)
    : Error("", std::move(op), std::move(what_went_wrong), current_rank()) {}

Error::Error(std::string communicator, std::string op, std::string what_went_wrong)
    : Error(std::move(communicator), std::move(op), std::move(what_went_wrong), current_rank()) {}

Error::Error(std::string communicator, std::string op, std::string what_went_wrong, int rank)
    : std::runtime_error(message(communicator, op, what_went_wrong)),
      rank_(rank), communicator_(std::move(communicator)), operation_(std::move(op)),
      detail_(std::move(what_went_wrong)) {}

namespace detail {

void throw_mpi_error(const char* call, int code, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) text[0] = '\0';
  std::string name(call);
  name = name.substr(0, name.find('('));
  throw Error(name, std::string(text) + " (MPI error code " + std::to_string(code) + ") at " + file + ":" +
                        std::to_string(line));
}

}  // namespace detail
}  // namespace mpidist
