// Asking other hosts' watchdogs about their ranks' progress.
#include "watch/remote_progress.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "watch/progress_board.hpp"
#include "watch/watchdog.hpp"

namespace mpidist::detail {
namespace {

constexpr int query_tag = 1;
// Answers carry the query's serial in their tag, so a late answer to an abandoned query never
// matches the next one. MPI guarantees tags up to 32767.
constexpr int first_answer_tag = 2;
constexpr std::uint32_t answer_tags = 32000;
// The other host's recent calls on a communicator whose hash differs: enough to find where the
// ranks parted, since the check runs every second.
constexpr std::size_t conflict_calls = 16;

enum class QueryKind : std::uint32_t { Views = 1, Hashes = 2 };

struct QueryHeader {
  QueryKind kind = QueryKind::Views;
  std::uint32_t serial = 0;
  std::uint64_t key = 0;  // Views: the call asked about
  std::uint64_t seq = 0;
};

// Hashes: one per rank of the asking host and communicator it tracks.
struct HashClaim {
  std::int32_t world_rank = -1;
  std::uint32_t unused = 0;
  std::uint64_t key = 0, done = 0, hash = 0;
};

struct HashAnswer {
  std::int32_t here = -1;   // the asker's rank
  std::int32_t there = -1;  // the answering host's rank that disagrees; -1: none does
  std::uint64_t key = 0, done = 0;
  std::uint32_t calls = 0;
  std::uint32_t unused = 0;
  EntrySnapshot recent[conflict_calls];
};

int answer_tag(std::uint32_t serial) { return first_answer_tag + static_cast<int>(serial % answer_tags); }

template <class T>
void append(std::vector<std::byte>& bytes, const T* values, std::size_t count) {
  const auto* from = reinterpret_cast<const std::byte*>(values);
  bytes.insert(bytes.end(), from, from + count * sizeof(T));
}

template <class T>
std::vector<T> read_array(const std::byte* body, std::size_t size) {
  std::vector<T> values(size / sizeof(T));
  std::memcpy(values.data(), body, values.size() * sizeof(T));
  return values;
}

}  // namespace

RemoteProgress::RemoteProgress(MPI_Comm world, int thread_level, const Topology& topology, const ProgressBoard& board)
    : board_(board), topology_(topology), my_host_(topology.hostname) {
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

std::vector<int> RemoteProgress::other_hosts() const {
  std::vector<int> servers;
  for (const auto& [host, ranks] : ranks_by_host_)
    if (host != my_host_) servers.push_back(ranks.front());
  return servers;
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
    const std::byte* body = query.data() + sizeof header;
    const std::size_t size = query.size() - sizeof header;
    auto& reply = replies_.emplace_back();
    if (header.kind == QueryKind::Views) {
      reply.bytes = answer_views(body, size, header.key, header.seq, now);
      ++questions_[status.MPI_SOURCE];
    }
    else if (header.kind == QueryKind::Hashes)
      reply.bytes = answer_hashes(body, size);
    MPI_Isend(reply.bytes.data(), static_cast<int>(reply.bytes.size()), MPI_BYTE, status.MPI_SOURCE,
              answer_tag(header.serial), comm_, &reply.request);
  }
}

template <class Done>
void RemoteProgress::serve_until(std::int64_t deadline_ns, Done&& done) {
  while (!done() && steady_now_ns() < deadline_ns) {
    serve_locked(steady_now_ns());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

RemoteProgress::Questions RemoteProgress::questions() {
  std::lock_guard lock(mutex_);
  return questions_;
}

void RemoteProgress::answer_until(const Questions& before, const std::vector<int>& askers,
                                  std::int64_t deadline_ns) noexcept {
  const auto host = ranks_by_host_.find(my_host_);
  if (comm_ == MPI_COMM_NULL || askers.empty() || host == ranks_by_host_.end() || host->second.front() != topology_.rank)
    return;
  const auto count = [](const Questions& q, int rank) {
    const auto it = q.find(rank);
    return it == q.end() ? 0u : it->second;
  };
  std::lock_guard lock(mutex_);
  try {
    serve_until(deadline_ns, [&] {
      return std::all_of(askers.begin(), askers.end(), [&](int r) { return count(questions_, r) > count(before, r); });
    });
  } catch (...) {
    // An allocation failed: the askers say that this host did not answer.
  }
}

std::vector<std::byte> RemoteProgress::answer_views(const std::byte* body, std::size_t size, std::uint64_t key,
                                                    std::uint64_t seq, std::int64_t now) const {
  std::vector<PeerView> views;
  for (const int world_rank : read_array<int>(body, size)) {
    // A rank not on this host's board keeps world_rank -1: the asker counts it as unanswered.
    const RankRecord* peer = board_.peer(world_rank);
    views.push_back(peer ? view_of(*peer, key, seq, now) : PeerView{});
  }
  std::vector<std::byte> bytes;
  append(bytes, views.data(), views.size());
  return bytes;
}

std::vector<std::byte> RemoteProgress::answer_hashes(const std::byte* body, std::size_t size) const {
  HashAnswer answer;
  for (const HashClaim& claim : read_array<HashClaim>(body, size)) {
    for (const int world_rank : board_.host_ranks()) {
      const RankRecord* peer = board_.peer(world_rank);
      std::uint64_t done = 0, hash = 0;
      if (!comparable_progress(peer ? progress_of(*peer, claim.key) : nullptr, done, hash)) continue;
      if (done != claim.done || hash == claim.hash) continue;
      answer.here = claim.world_rank;
      answer.there = world_rank;
      answer.key = claim.key;
      answer.done = done;
      const auto calls = completed_calls(*peer, claim.key);
      for (auto it = calls.rbegin(); it != calls.rend() && answer.calls < conflict_calls; ++it)
        answer.recent[answer.calls++] = it->second;
      break;
    }
    if (answer.there >= 0) break;
  }
  std::vector<std::byte> bytes;
  append(bytes, &answer, 1);
  return bytes;
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

void RemoteProgress::exchange(std::vector<Exchange>& exchanges, std::uint32_t serial, double patience_seconds) {
  for (auto& e : exchanges) {
    MPI_Irecv(e.answer.data(), static_cast<int>(e.answer.size()), MPI_BYTE, e.server, answer_tag(serial), comm_,
              &e.received);
    MPI_Isend(e.query.data(), static_cast<int>(e.query.size()), MPI_BYTE, e.server, query_tag, comm_, &e.sent);
  }
  serve_until(steady_now_ns() + static_cast<std::int64_t>(patience_seconds * 1e9), [&] {
    bool all = true;
    for (auto& e : exchanges) {
      int done = 0;
      MPI_Test(&e.received, &done, MPI_STATUS_IGNORE);
      e.answered = e.answered || done;
      all = all && e.answered;
    }
    return all;
  });
  for (auto& e : exchanges) {
    for (MPI_Request* request : {&e.received, &e.sent}) {
      int done = 0;
      MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (!done) {
        MPI_Cancel(request);
        MPI_Wait(request, MPI_STATUS_IGNORE);
      }
    }
  }
}

std::map<int, PeerView> RemoteProgress::ask(std::uint64_t key, std::uint64_t seq, const std::vector<int>& world_ranks,
                                            double patience_seconds) {
  std::map<int, PeerView> answers;
  std::lock_guard lock(mutex_);
  if (comm_ == MPI_COMM_NULL || world_ranks.empty()) return answers;
  // One query per host, to its lowest world rank: any watchdog there reads the whole host's board.
  std::map<int, std::vector<int>> asked;  // server -> world ranks asked about
  for (const int world_rank : world_ranks)
    if (world_rank >= 0 && static_cast<std::size_t>(world_rank) < topology_.ranks.size())
      asked[ranks_by_host_[topology_.ranks[static_cast<std::size_t>(world_rank)].hostname].front()].push_back(world_rank);
  const std::uint32_t serial = queries_++;
  std::vector<Exchange> exchanges;
  for (const auto& [server, ranks] : asked) {
    auto& e = exchanges.emplace_back();
    e.server = server;
    const QueryHeader header{QueryKind::Views, serial, key, seq};
    append(e.query, &header, 1);
    append(e.query, ranks.data(), ranks.size());
    e.answer.resize(ranks.size() * sizeof(PeerView));
  }
  exchange(exchanges, serial, patience_seconds);
  std::size_t i = 0;
  for (const auto& [server, ranks] : asked) {
    const Exchange& e = exchanges[i++];
    if (!e.answered) continue;
    const auto views = read_array<PeerView>(e.answer.data(), e.answer.size());
    for (std::size_t r = 0; r < ranks.size(); ++r)
      if (views[r].world_rank == ranks[r]) answers[ranks[r]] = views[r];
  }
  return answers;
}

HashConflict RemoteProgress::compare_hashes(double patience_seconds) {
  HashConflict conflict;
  std::lock_guard lock(mutex_);
  const auto servers = other_hosts();
  if (comm_ == MPI_COMM_NULL || servers.empty()) return conflict;
  // This host's claims: every rank's finished count and hash on every communicator it tracks.
  std::vector<HashClaim> claims;
  for (const int world_rank : board_.host_ranks()) {
    const RankRecord* record = board_.peer(world_rank);
    if (record == nullptr) continue;
    for (const auto& slot : record->header.comms) {
      HashClaim claim{world_rank, 0, slot.key.load(std::memory_order_acquire), 0, 0};
      if (comparable_progress(&slot, claim.done, claim.hash)) claims.push_back(claim);
    }
  }
  if (claims.empty()) return conflict;
  const std::uint32_t serial = queries_++;
  std::vector<Exchange> exchanges(servers.size());
  for (std::size_t i = 0; i < servers.size(); ++i) {
    exchanges[i].server = servers[i];
    const QueryHeader header{QueryKind::Hashes, serial, 0, 0};
    append(exchanges[i].query, &header, 1);
    append(exchanges[i].query, claims.data(), claims.size());
    exchanges[i].answer.resize(sizeof(HashAnswer));
  }
  exchange(exchanges, serial, patience_seconds);
  for (const Exchange& e : exchanges) {
    if (!e.answered) continue;
    HashAnswer answer;
    std::memcpy(&answer, e.answer.data(), sizeof answer);
    if (answer.there < 0) continue;
    conflict.key = answer.key;
    conflict.done = answer.done;
    conflict.here = answer.here;
    conflict.there = answer.there;
    for (std::uint32_t c = 0; c < std::min<std::uint32_t>(answer.calls, conflict_calls); ++c)
      conflict.their_calls[answer.recent[c].seq] = answer.recent[c];
    break;
  }
  return conflict;
}

}  // namespace mpidist::detail
