// Refusals of a call, published and read on the progress board (refusals.hpp).
#include "watch/refusals.hpp"

#include <algorithm>
#include <cstring>

#include "core/context.hpp"
#include "core/group.hpp"
#include "watch/peer_view.hpp"
#include "watch/progress_board.hpp"

namespace mpidist::detail {
namespace {

// `fn(rank among members, its progress slot)` for every other member of communicator `key` on
// this host, until it returns a value.
template <class Fn>
std::optional<PeerNews> first_host_peer(std::uint64_t key, const std::vector<int>& members, Fn fn) noexcept {
  const Context* ctx = context_if_initialized();
  if (ctx == nullptr || !ctx->board || key == 0) return std::nullopt;
  const int me = ctx->board->mine().header.world_rank;
  for (const int world_rank : ctx->board->host_ranks()) {
    if (world_rank == me) continue;
    const auto at = std::find(members.begin(), members.end(), world_rank);
    if (at == members.end()) continue;
    const RankRecord* record = ctx->board->peer(world_rank);
    const CommProgress* slot = record != nullptr ? progress_of(*record, key) : nullptr;
    if (slot == nullptr) continue;
    if (auto news = fn(static_cast<int>(at - members.begin()), *slot)) return news;
  }
  return std::nullopt;
}

// Writes `why` (cut to fit) into `text`, then `seq` into `published` with release; `published` is
// 0 meanwhile, so that a reader never takes a half-written text for it.
void publish(std::atomic<std::uint64_t>& published, char (&text)[refusal_text_size], std::uint64_t seq,
             const std::string& why) noexcept {
  published.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const std::size_t n = std::min(why.size(), refusal_text_size - 1);
  std::memcpy(text, why.data(), n);
  text[n] = '\0';
  published.store(seq, std::memory_order_release);
}

// The text published with `seq`, or "" where it was rewritten while being read (a later call's).
std::string read_published(const std::atomic<std::uint64_t>& published, const char (&text)[refusal_text_size],
                           std::uint64_t seq) noexcept {
  char copy[refusal_text_size];
  std::memcpy(copy, text, refusal_text_size);
  copy[refusal_text_size - 1] = '\0';
  std::atomic_thread_fence(std::memory_order_acquire);
  if (published.load(std::memory_order_relaxed) != seq) return {};
  try {
    return copy;
  } catch (...) {
    return {};
  }
}

}  // namespace

void publish_refusal(const Group& group, std::uint64_t seq, const std::string& why) noexcept {
  const Context* ctx = context_if_initialized();
  if (ctx == nullptr || !ctx->board || group.progress_slot < 0 || seq == 0) return;
  CommProgress& slot = ctx->board->mine().header.comms[group.progress_slot];
  publish(slot.refused, slot.refusal, seq, why);
}

std::string refusal_text(const CommProgress& slot, std::uint64_t seq) noexcept {
  return read_published(slot.refused, slot.refusal, seq);
}

void relay_refusal(const Group& group, std::uint64_t seq, const PeerNews& news) noexcept {
  const Context* ctx = context_if_initialized();
  if (ctx == nullptr || !ctx->board || group.progress_slot < 0 || seq == 0) return;
  CommProgress& slot = ctx->board->mine().header.comms[group.progress_slot];
  slot.relayed.store(0, std::memory_order_relaxed);
  slot.relayed_rank = news.rank;
  slot.relayed_broke_at = news.broke_at;
  publish(slot.relayed, slot.relayed_text, seq, news.text);
}

std::optional<PeerNews> refusal_of(std::uint64_t key, const std::vector<int>& members, std::uint64_t seq) noexcept {
  if (seq == 0) return std::nullopt;
  return first_host_peer(key, members, [seq](int rank, const CommProgress& slot) -> std::optional<PeerNews> {
    if (slot.refused.load(std::memory_order_acquire) == seq) return PeerNews{rank, refusal_text(slot, seq)};
    if (slot.relayed.load(std::memory_order_acquire) == seq) {
      const int refuser = slot.relayed_rank;
      const std::uint64_t broke_at = slot.relayed_broke_at;
      return PeerNews{refuser, read_published(slot.relayed, slot.relayed_text, seq), false, broke_at};
    }
    return std::nullopt;
  });
}

std::optional<PeerNews> broken_before(std::uint64_t key, const std::vector<int>& members, std::uint64_t seq) noexcept {
  if (seq == 0) return std::nullopt;
  return first_host_peer(key, members, [seq](int rank, const CommProgress& slot) -> std::optional<PeerNews> {
    const std::uint64_t broke_at = slot.failed_at.load(std::memory_order_acquire);
    if (broke_at == 0 || broke_at >= seq) return std::nullopt;
    return PeerNews{rank, refusal_text(slot, broke_at), false, broke_at};  // its refusal there, if it refused
  });
}

std::optional<PeerNews> departure_from(std::uint64_t key, const std::vector<int>& members,
                                       std::uint64_t seq) noexcept {
  if (seq == 0) return std::nullopt;
  return first_host_peer(key, members, [seq](int rank, const CommProgress& slot) -> std::optional<PeerNews> {
    // Its latest refusal: this call's (it votes too), or a later call's, after a vote that every
    // rank lost alike, this one's perhaps among them: then nothing tells whether it refused this
    // one, and the vote waits on.
    if (slot.refused.load(std::memory_order_acquire) >= seq) return std::nullopt;
    if (slot.failed_at.load(std::memory_order_acquire) == seq) return PeerNews{rank, "left it"};
    if (slot.done.load(std::memory_order_acquire) >= seq) return PeerNews{rank, "finished it"};
    return std::nullopt;
  });
}

}  // namespace mpidist::detail
