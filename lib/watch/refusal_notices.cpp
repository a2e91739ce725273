// Refusals across hosts, as messages on the process's notice channel (refusal_notices.hpp).
#include "watch/refusal_notices.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/context.hpp"
#include "core/group.hpp"
#include "watch/progress_board.hpp"
#include "watch/progress_record.hpp"

namespace mpidist::detail {
namespace {

constexpr int notice_tag = 1;
// A job's refusals are few; the mailbox keeps the latest ones where nobody reads them (every rank
// refused alike on a host whose ranks never waited).
constexpr std::size_t mailbox_limit = 1024;

}  // namespace

struct RefusalNotices::Notice {
  Kind kind = Kind::Refusal;
  std::uint32_t unused = 0;
  std::uint64_t key = 0;       // the group's (Group::key, the same on every member)
  std::uint64_t seq = 0;       // the call the sender will not join, or (a departure) left
  std::uint64_t broke_at = 0;  // PeerNews::broke_at
  char text[refusal_text_size] = {};
};

// A notice on its way. A send completes as soon as MPI has taken the few bytes, long before
// anyone receives them.
struct RefusalNotices::Sent {
  Notice notice;
  MPI_Request request = MPI_REQUEST_NULL;
};

RefusalNotices::RefusalNotices(MPI_Comm world) {
  if (MPI_Comm_dup(world, &comm_) != MPI_SUCCESS) {
    comm_ = MPI_COMM_NULL;
    return;
  }
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
}

RefusalNotices::~RefusalNotices() { release(); }

void RefusalNotices::release() noexcept {
  std::lock_guard lock(mutex_);
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    try {
      receive_arrived();
    } catch (...) {
      // No memory for the mail: what is left goes unreceived.
    }
    reap_sent();
    for (auto& s : sent_) {
      MPI_Request_free(&s->request);  // the send goes on; its buffer is left to MPI for good
      (void)s.release();
    }
    sent_.clear();
    MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

void RefusalNotices::reap_sent() noexcept {
  for (auto it = sent_.begin(); it != sent_.end();) {
    int done = 0;
    MPI_Test(&(*it)->request, &done, MPI_STATUS_IGNORE);
    it = done ? sent_.erase(it) : std::next(it);
  }
}

void RefusalNotices::send(const Group& group, int to, Kind kind, std::uint64_t seq, const std::string& text,
                          std::uint64_t broke_at) noexcept {
  std::lock_guard lock(mutex_);
  if (comm_ == MPI_COMM_NULL || to < 0 || to >= group.topology.size) return;
  try {
    reap_sent();
    auto s = std::make_unique<Sent>();
    s->notice.kind = kind;
    s->notice.key = group.key;
    s->notice.seq = seq;
    s->notice.broke_at = broke_at;
    const std::size_t n = std::min(text.size(), refusal_text_size - 1);
    std::memcpy(s->notice.text, text.data(), n);
    const int bytes = static_cast<int>(offsetof(Notice, text) + n + 1);
    const int dest = group.world_ranks[static_cast<std::size_t>(to)];
    if (MPI_Isend(&s->notice, bytes, MPI_BYTE, dest, notice_tag, comm_, &s->request) == MPI_SUCCESS)
      sent_.push_back(std::move(s));
  } catch (...) {
    // No memory for it: that rank learns of the refusal at its timeout, as without notices.
  }
}

void RefusalNotices::send_to_other_hosts(const Group& group, std::uint64_t seq, const std::string& text,
                                         std::uint64_t broke_at) noexcept {
  const Context* ctx = context_if_initialized();
  if (ctx == nullptr || seq == 0 || group.topology.num_nodes < 2) return;
  for (int r = 0; r < group.topology.size; ++r) {
    const int world_rank = group.world_ranks[static_cast<std::size_t>(r)];
    const bool reads_my_board = ctx->board && ctx->board->peer(world_rank) != nullptr;
    if (r != group.topology.rank && !reads_my_board) send(group, r, Kind::Refusal, seq, text, broke_at);
  }
}

void RefusalNotices::send_refusals(const Group& group, std::uint64_t seq, const std::string& why) noexcept {
  send_to_other_hosts(group, seq, why, 0);
}

void RefusalNotices::send_break(const Group& group, std::uint64_t seq) noexcept {
  // The others may have finished call `seq` (a broadcast's root does without this rank) and wait
  // in the next; where they did not, the call's own refusal notice or timeout reaches them.
  const Context* ctx = context_if_initialized();
  if (ctx == nullptr || !ctx->board || group.progress_slot < 0) return;
  const std::string why = refusal_text(ctx->board->mine().header.comms[group.progress_slot], seq);
  send_to_other_hosts(group, seq + 1, why, seq);
}

void RefusalNotices::send_departure(const Group& group, int refuser, std::uint64_t seq) noexcept {
  send(group, refuser, Kind::Departure, seq, "left it", 0);
}

void RefusalNotices::receive_arrived() {
  for (;;) {
    int found = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, notice_tag, comm_, &found, &message, &status) != MPI_SUCCESS || !found) return;
    // Every notice fits one (send() sends at most its whole), so it is received in place.
    Notice notice;
    if (MPI_Mrecv(&notice, sizeof notice, MPI_BYTE, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
    notice.text[refusal_text_size - 1] = '\0';
    if (mailbox_.size() >= mailbox_limit) mailbox_.erase(mailbox_.begin());
    mailbox_.try_emplace(Key{notice.kind, notice.key, notice.seq}, Mail{status.MPI_SOURCE, notice.text, notice.broke_at});
  }
}

std::optional<PeerNews> RefusalNotices::take(const Group& group, Kind kind, std::uint64_t seq) noexcept {
  if (seq == 0 || group.topology.num_nodes < 2) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (comm_ == MPI_COMM_NULL) return std::nullopt;
  try {
    receive_arrived();
    const auto it = mailbox_.find(Key{kind, group.key, seq});
    if (it == mailbox_.end()) return std::nullopt;
    const auto at = std::find(group.world_ranks.begin(), group.world_ranks.end(), it->second.world_rank);
    return PeerNews{static_cast<int>(at - group.world_ranks.begin()), it->second.text, true, it->second.broke_at};
  } catch (...) {
    return std::nullopt;  // no memory: the next look reads it
  }
}

std::optional<PeerNews> RefusalNotices::refusal(const Group& group, std::uint64_t seq) noexcept {
  return take(group, Kind::Refusal, seq);
}

std::optional<PeerNews> RefusalNotices::departure(const Group& group, std::uint64_t seq) noexcept {
  return take(group, Kind::Departure, seq);
}

void RefusalNotices::forget(const Group& group, std::uint64_t seq) noexcept {
  std::lock_guard lock(mutex_);
  mailbox_.erase(Key{Kind::Refusal, group.key, seq});
}

void RefusalNotices::flush() noexcept {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      reap_sent();
      if (sent_.empty() || std::chrono::steady_clock::now() >= give_up) return;
    }
    std::this_thread::yield();
  }
}

RefusalNotices* refusal_notices() noexcept {
  Context* ctx = context_if_initialized();
  return ctx != nullptr ? ctx->notices.get() : nullptr;
}

}  // namespace mpidist::detail
