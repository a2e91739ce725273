// launch(): restarting a plain ./program under mpiexec.
#include "mpidist/launch.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include "mpi/launcher.hpp"
#include "mpidist/environment.hpp"
#include "mpidist/error.hpp"
#include "mpidist/log.hpp"

extern char** environ;

namespace mpidist {
namespace {

constexpr const char* launched_marker = "MPIDIST_LAUNCHED";

// This program's own arguments, from the kernel: launch() needs no argc/argv from the caller.
std::vector<std::string> own_arguments() {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t start = 0; start < raw.size();) {
    const std::size_t end = raw.find('\0', start);
    args.push_back(raw.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return args;
}

std::vector<std::string> split_words(const char* text) {
  std::vector<std::string> words;
  std::istringstream in(text ? text : "");
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::string self_executable() {
  std::vector<char> path(4096);
  const ssize_t length = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (length <= 0) throw Error("launch", std::string("cannot find this program's path: ") + std::strerror(errno));
  return std::string(path.data(), static_cast<std::size_t>(length));
}

}  // namespace

namespace {
bool launcher_variables_present() {
  if (std::getenv(launched_marker) != nullptr) return true;
  for (const std::string_view name : detail::mpi::launcher_variables())
    if (std::getenv(std::string(name).c_str()) != nullptr) return true;
  return false;
}
// Taken when the library is loaded, before main(): an MPI started as a singleton (no launcher)
// adds such variables to its own environment during MPI_Init.
const bool g_started_by_launcher = launcher_variables_present();

// The MPI runtime variables the process started with (the user's OMPI_MCA_* settings, say).
const std::set<std::string> g_runtime_variables_at_start = [] {
  std::set<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (detail::mpi::is_runtime_variable(name)) names.emplace(name);
  }
  return names;
}();

// The environment for the ranks: this one, less what a singleton MPI_Init added (its server
// address and rank would make mpiexec join this process's runtime instead of starting its own),
// plus the marker that stops the ranks from launching again.
std::vector<std::string> child_environment() {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string name(text.substr(0, text.find('=')));
    if (name == launched_marker) continue;
    if (detail::mpi::is_runtime_variable(name) && g_runtime_variables_at_start.count(name) == 0) continue;
    entries.emplace_back(text);
  }
  entries.push_back(std::string(launched_marker) + "=1");
  return entries;
}
}  // namespace

bool started_by_launcher() { return g_started_by_launcher; }

int launch(int nproc, const std::function<void()>& fn, const LaunchOptions& options) {
  if (nproc < 1) throw Error("launch", "nproc must be at least 1, got " + std::to_string(nproc));
  if (started_by_launcher() || (is_initialized() && is_distributed())) {
    const bool started_here = !is_initialized();
    if (started_here) initialize();
    fn();
    if (started_here) finalize();
    return 0;
  }

  std::vector<std::string> command{options.mpiexec};
  if (command[0].empty())
    command[0] = std::getenv("MPIDIST_MPIEXEC") ? std::getenv("MPIDIST_MPIEXEC") : detail::mpi::default_mpiexec();
  auto extra = options.mpiexec_args.empty() ? split_words(std::getenv("MPIDIST_MPIEXEC_ARGS")) : options.mpiexec_args;
  const auto needed = detail::mpi::launcher_arguments(nproc);
  extra.insert(extra.begin(), needed.begin(), needed.end());
  command.insert(command.end(), extra.begin(), extra.end());
  command.insert(command.end(), {"-n", std::to_string(nproc), self_executable()});
  const auto args = own_arguments();
  if (!args.empty()) command.insert(command.end(), args.begin() + 1, args.end());

  std::vector<char*> argv;
  for (auto& word : command) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::string text;
  for (const auto& word : command) text += (text.empty() ? "" : " ") + word;
  logger().debug("launch: ", text);

  // The marker travels to every rank through the launcher's environment forwarding.
  auto environment = child_environment();
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t child = 0;
  const int rc = posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) throw Error("launch", "cannot start '" + command[0] + "': " + std::strerror(rc));
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw Error("launch", std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace mpidist
