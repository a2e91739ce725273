// The MPI implementation's launcher as launch() sees it.
#include "mpi/launcher.hpp"

#include <mpi.h>
#include <unistd.h>

#include <thread>

namespace mpidist::detail::mpi {
namespace {

// Every launcher that speaks PMI (Hydra, srun --mpi=pmi2) or PMIx (Open MPI's, srun --mpi=pmix).
constexpr std::string_view pmi_variables[] = {"PMI_SIZE", "PMI_RANK", "PMIX_RANK"};

// Variables of this implementation's own launcher, and the prefixes of its runtime's variables.
#ifdef OPEN_MPI
constexpr std::string_view own_variables[] = {"OMPI_COMM_WORLD_SIZE"};
constexpr std::string_view runtime_prefixes[] = {"OMPI_", "PMIX_", "ORTE_", "OPAL_", "PRTE_", "PMI_"};
#elif defined(MPICH_VERSION)
constexpr std::string_view own_variables[] = {"MPI_LOCALNRANKS"};
constexpr std::string_view runtime_prefixes[] = {"PMI_", "PMIX_", "HYDRA_", "MPIR_", "MPICH_", "MPIEXEC_"};
#else
constexpr std::string_view own_variables[] = {"MPI_LOCALNRANKS"};
constexpr std::string_view runtime_prefixes[] = {"PMI_", "PMIX_", "MPIR_"};
#endif

}  // namespace

std::string default_mpiexec() {
  // MPIDIST_DEFAULT_MPIEXEC is the path the build found (lib/mpi/meson.build), if any.
  const std::string built_with = MPIDIST_DEFAULT_MPIEXEC;
  if (!built_with.empty() && access(built_with.c_str(), X_OK) == 0) return built_with;
  return "mpiexec";
}

std::vector<std::string> launcher_arguments(int nproc) {
#ifdef OPEN_MPI
  if (static_cast<unsigned>(nproc) > std::thread::hardware_concurrency()) return {"--oversubscribe"};
#else
  (void)nproc;
#endif
  return {};
}

const std::vector<std::string_view>& launcher_variables() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all(std::begin(own_variables), std::end(own_variables));
    all.insert(all.end(), std::begin(pmi_variables), std::end(pmi_variables));
    return all;
  }();
  return names;
}

bool is_runtime_variable(std::string_view name) {
  for (const std::string_view prefix : runtime_prefixes)
    if (name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

}  // namespace mpidist::detail::mpi
