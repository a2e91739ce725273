// How the joiners of a communicator smaller than MPI_COMM_WORLD find each other.
//
// Only the members call ncclCommInitRank, and the id reached them over a channel the emulation
// cannot see (production broadcasts it over the group's MPI communicator), so there is no MPI
// communicator to exchange over yet. Instead, like NCCL's bootstrap, the id names a meeting place:
//   1. ncclGetUniqueId puts a random token in the id; the rendezvous is the directory
//      mpidist-emu-nccl-<token> under MPIDIST_EMU_RENDEZVOUS_DIR, /dev/shm or $TMPDIR.
//   2. Each joiner writes its Joiner record there as rec-<world rank> (written under a temporary
//      name, then renamed, so a reader never sees half a record).
//   3. Each polls until as many records exist as the smallest nranks any of them passed that
//      could be right (1..world size): with one member passing a wrong nranks, every member still
//      stops at the same table and fails the same check instead of waiting forever.
//   4. Each then writes done-<world rank>; whoever sees every member done removes the directory.
// Each step is one look (rendezvous_poll), so a non-blocking ncclCommInitRankConfig can return
// ncclInProgress between looks; ncclCommAbort takes its record back (rendezvous_withdraw).
// The rendezvous needs the processes to share the directory (one machine, as in CI).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "nccl_internal.hpp"

namespace mpidist_emu {
namespace {

std::string base_directory() {
  if (const char* dir = std::getenv("MPIDIST_EMU_RENDEZVOUS_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";  // tmpfs: no disk traffic
  if (const char* dir = std::getenv("TMPDIR"); dir != nullptr && *dir != '\0') return dir;
  return "/tmp";
}

bool write_file(const std::string& dir, const std::string& name, const void* data, std::size_t size) {
  const std::string temporary = dir + "/.tmp-" + name + "-" + std::to_string(getpid());
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  const bool written = size == 0 || write(fd, data, size) == static_cast<ssize_t>(size);
  close(fd);
  return written && rename(temporary.c_str(), (dir + "/" + name).c_str()) == 0;
}

std::vector<std::string> entries(const std::string& dir, const char* prefix) {
  std::vector<std::string> names;
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) return names;
  while (const dirent* entry = readdir(listing)) {
    if (std::strncmp(entry->d_name, prefix, std::strlen(prefix)) == 0) names.emplace_back(entry->d_name);
  }
  closedir(listing);
  return names;
}

std::vector<Joiner> read_records(const std::string& dir) {
  std::vector<Joiner> table;
  for (const std::string& name : entries(dir, "rec-")) {
    Joiner record{};
    FILE* file = std::fopen((dir + "/" + name).c_str(), "rb");
    if (file == nullptr) continue;
    if (std::fread(&record, sizeof record, 1, file) == 1) table.push_back(record);
    std::fclose(file);
  }
  std::sort(table.begin(), table.end(), [](const Joiner& a, const Joiner& b) { return a.world_rank < b.world_rank; });
  return table;
}

// Step 3: the number of records to wait for (INT_MAX while no record has a plausible nranks).
int target(const std::vector<Joiner>& table, int world) {
  int smallest = INT_MAX;
  for (const Joiner& j : table) {
    if (j.nranks >= 1 && j.nranks <= world) smallest = std::min(smallest, j.nranks);
  }
  return smallest;
}

std::string arrivals(const std::vector<Joiner>& table) {
  std::string text;
  for (const Joiner& j : table)
    text += (text.empty() ? "" : ", ") + std::string("process ") + std::to_string(j.world_rank) + " (rank " +
            std::to_string(j.rank) + ")";
  return text.empty() ? "none" : text;
}

// Step 4: the last member to finish reading removes the rendezvous.
void leave(const std::string& dir, const Joiner& mine, std::size_t members) {
  write_file(dir, "done-" + std::to_string(mine.world_rank), nullptr, 0);
  if (entries(dir, "done-").size() < members) return;
  for (const std::string& name : entries(dir, "")) {
    if (name != "." && name != "..") unlink((dir + "/" + name).c_str());  // a twin remover may race: harmless
  }
  rmdir(dir.c_str());
}

}  // namespace

std::string id_token(const ncclUniqueId& id) {
  std::string text;
  char digits[3];
  for (int i = 16; i < 32; ++i) {
    std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(id.internal[i]));
    text += digits;
  }
  return text;
}

std::string rendezvous_join(const Joiner& mine, const char* call) {
  const std::string dir = base_directory() + "/mpidist-emu-nccl-" + id_token(mine.id);
  mkdir(dir.c_str(), 0700);  // EEXIST: another joiner was first
  if (!write_file(dir, "rec-" + std::to_string(mine.world_rank), &mine, sizeof mine)) {
    diagnose(std::string(call) + ": cannot write the rendezvous record in " + dir + ": " + std::strerror(errno));
    std::abort();  // the peers could not learn of this failure: aborting beats their hanging
  }
  return dir;
}

bool rendezvous_poll(const std::string& dir, const Joiner& mine, std::vector<Joiner>* table) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  *table = read_records(dir);
  if (static_cast<int>(table->size()) < target(*table, world)) return false;
  leave(dir, mine, table->size());
  return true;
}

void rendezvous_withdraw(const std::string& dir, const Joiner& mine) {
  unlink((dir + "/rec-" + std::to_string(mine.world_rank)).c_str());
  rmdir(dir.c_str());  // only succeeds when nobody else is left in it
}

std::string rendezvous_arrivals(const std::string& dir) { return arrivals(read_records(dir)); }

void wait_request(MPI_Request* request, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (config().hang_seconds > 0 && waited > config().hang_seconds) {
      diagnose(what + " waited " + std::to_string(static_cast<int>(waited)) +
               " s (MPIDIST_EMU_HANG_SECONDS): not every process called it");
      std::abort();
    }
    if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(polls > 2000 ? 500 : 20));
  }
}

}  // namespace mpidist_emu
