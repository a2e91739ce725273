#include "remote_progress.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "progress_board.hpp"
#include "watchdog.hpp"

namespace mpidist::detail {
namespace {

constexpr int query_tag = 1;
// Replies carry the query's serial in their tag, so a late answer to an abandoned query never
// matches the next one. MPI guarantees tags up to 32767.
constexpr int first_reply_tag = 2;
constexpr std::uint32_t reply_tags = 32000;

struct QueryHeader {
  std::uint64_t key = 0;
  std::uint64_t seq = 0;
  std::uint32_t serial = 0;
  std::int32_t count = 0;  // world ranks that follow
};

int reply_tag(std::uint32_t serial) { return first_reply_tag + static_cast<int>(serial % reply_tags); }

}  // namespace

RemoteProgress::RemoteProgress(MPI_Comm world, int thread_level, const Topology& topology, const ProgressBoard& board)
    : board_(board), topology_(topology) {
  // Every rank must make the same choice: the communicator is created collectively or not at all.
  int level = thread_level;
  if (MPI_Allreduce(MPI_IN_PLACE, &level, 1, MPI_INT, MPI_MIN, world) != MPI_SUCCESS) return;
  if (level < MPI_THREAD_MULTIPLE || topology.ranks.empty()) return;
  if (MPI_Comm_dup(world, &comm_) != MPI_SUCCESS) {
    comm_ = MPI_COMM_NULL;
    return;
  }
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  for (const auto& placement : topology.ranks) ranks_by_host_[placement.hostname].push_back(placement.rank);
}

RemoteProgress::~RemoteProgress() { release(); }

void RemoteProgress::release() noexcept {
  std::lock_guard lock(mutex_);
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    reap_replies(true);
    MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

void RemoteProgress::serve(std::int64_t now) noexcept {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock || comm_ == MPI_COMM_NULL) return;
  try {
    serve_locked(now);
  } catch (...) {
    // An allocation failed: that query goes unanswered, and its asker says so.
  }
}

void RemoteProgress::serve_locked(std::int64_t now) {
  reap_replies(false);
  for (;;) {
    int arrived = 0;
    MPI_Message message;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, query_tag, comm_, &arrived, &message, &status) != MPI_SUCCESS || !arrived) return;
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<std::byte> query(static_cast<std::size_t>(std::max(bytes, 0)));
    if (MPI_Mrecv(query.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) continue;
    QueryHeader header;
    if (query.size() < sizeof header) continue;
    std::memcpy(&header, query.data(), sizeof header);
    if (header.count < 0 || query.size() != sizeof header + static_cast<std::size_t>(header.count) * sizeof(int)) continue;
    auto& reply = replies_.emplace_back();
    reply.views.resize(static_cast<std::size_t>(header.count));
    for (std::int32_t i = 0; i < header.count; ++i) {
      int world_rank = -1;
      std::memcpy(&world_rank, query.data() + sizeof header + static_cast<std::size_t>(i) * sizeof(int), sizeof(int));
      // A rank not on this host's board keeps world_rank -1: the asker treats it as unanswered.
      if (const RankRecord* peer = board_.peer(world_rank)) reply.views[static_cast<std::size_t>(i)] = view_of(*peer, header.key, header.seq, now);
    }
    MPI_Isend(reply.views.data(), static_cast<int>(reply.views.size() * sizeof(PeerView)), MPI_BYTE, status.MPI_SOURCE,
              reply_tag(header.serial), comm_, &reply.request);
  }
}

void RemoteProgress::reap_replies(bool give_up) noexcept {
  for (auto it = replies_.begin(); it != replies_.end();) {
    int done = it->request == MPI_REQUEST_NULL;
    if (!done) MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (!done && give_up) {
      // The asker is gone or gave up: a cancelled send's wait returns whatever its peer does.
      MPI_Cancel(&it->request);
      MPI_Wait(&it->request, MPI_STATUS_IGNORE);
      done = 1;
    }
    it = done ? replies_.erase(it) : std::next(it);
  }
}

std::map<int, PeerView> RemoteProgress::ask(std::uint64_t key, std::uint64_t seq, const std::vector<int>& world_ranks,
                                            double patience_seconds) {
  std::map<int, PeerView> answers;
  std::lock_guard lock(mutex_);
  if (comm_ == MPI_COMM_NULL || world_ranks.empty()) return answers;
  // One query per host, to its lowest world rank: any watchdog there reads the whole host's board.
  struct Exchange {
    int server = -1;
    std::vector<int> ranks;
    std::vector<std::byte> query;
    std::vector<PeerView> views;
    MPI_Request sent = MPI_REQUEST_NULL, received = MPI_REQUEST_NULL;
  };
  std::map<std::string, Exchange> by_host;
  for (const int world_rank : world_ranks) {
    if (world_rank < 0 || static_cast<std::size_t>(world_rank) >= topology_.ranks.size()) continue;
    const std::string& host = topology_.ranks[static_cast<std::size_t>(world_rank)].hostname;
    auto& exchange = by_host[host];
    exchange.server = ranks_by_host_[host].front();
    exchange.ranks.push_back(world_rank);
  }
  const std::uint32_t serial = queries_++;
  for (auto& [host, exchange] : by_host) {
    QueryHeader header{key, seq, serial, static_cast<std::int32_t>(exchange.ranks.size())};
    exchange.query.resize(sizeof header + exchange.ranks.size() * sizeof(int));
    std::memcpy(exchange.query.data(), &header, sizeof header);
    std::memcpy(exchange.query.data() + sizeof header, exchange.ranks.data(), exchange.ranks.size() * sizeof(int));
    exchange.views.resize(exchange.ranks.size());
    MPI_Irecv(exchange.views.data(), static_cast<int>(exchange.views.size() * sizeof(PeerView)), MPI_BYTE,
              exchange.server, reply_tag(serial), comm_, &exchange.received);
    MPI_Isend(exchange.query.data(), static_cast<int>(exchange.query.size()), MPI_BYTE, exchange.server, query_tag,
              comm_, &exchange.sent);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(patience_seconds);
  for (;;) {
    bool all = true;
    for (auto& [host, exchange] : by_host) {
      int done = 0;
      MPI_Test(&exchange.received, &done, MPI_STATUS_IGNORE);
      all = all && done;
    }
    if (all || std::chrono::steady_clock::now() >= deadline) break;
    // Another host may be asking this one at the same moment: answer while waiting.
    serve_locked(steady_now_ns());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& [host, exchange] : by_host) {
    int received = exchange.received == MPI_REQUEST_NULL;
    for (MPI_Request* request : {&exchange.received, &exchange.sent}) {
      int done = 0;
      MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (!done) {
        MPI_Cancel(request);
        MPI_Wait(request, MPI_STATUS_IGNORE);
      }
    }
    if (!received) continue;
    for (std::size_t i = 0; i < exchange.ranks.size(); ++i)
      if (exchange.views[i].world_rank == exchange.ranks[i]) answers[exchange.ranks[i]] = exchange.views[i];
  }
  return answers;
}

}  // namespace mpidist::detail
