// What one rank is doing about one collective, as its host sees it.
#include "watch/peer_view.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "watch/refusals.hpp"

namespace mpidist::detail {
namespace {

// A watchdog ticks ten times a second: three seconds without a tick means it (or its process) stopped.
constexpr std::int64_t silent_after_ns = 3'000'000'000LL;

}  // namespace

bool process_alive(std::uint64_t pid) noexcept {
  return pid != 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH);
}

const CommProgress* progress_of(const RankRecord& record, std::uint64_t key) noexcept {
  for (const auto& slot : record.header.comms)
    if (slot.key.load(std::memory_order_acquire) == key) return &slot;
  return nullptr;
}

EntrySnapshot find_call(const RankRecord& record, std::uint64_t key, std::uint64_t seq) {
  const auto recorded = record.header.recorded.load(std::memory_order_acquire);
  const auto capacity = record.header.capacity;
  for (auto id = recorded; id >= oldest_held(recorded, capacity) && id > 0; --id) {
    const auto e = read_entry(record, id);
    if (e.valid && e.comm_key == key && e.seq == seq) return e;
  }
  return {};
}

std::map<std::uint64_t, EntrySnapshot> completed_calls(const RankRecord& record, std::uint64_t key) {
  std::map<std::uint64_t, EntrySnapshot> calls;
  const auto recorded = record.header.recorded.load(std::memory_order_acquire);
  for (auto id = oldest_held(recorded, record.header.capacity); id <= recorded && id > 0; ++id) {
    const auto e = read_entry(record, id);
    if (e.valid && e.comm_key == key && e.seq != 0 && e.state == CallState::Completed) calls[e.seq] = e;
  }
  return calls;
}

PeerView view_of(const RankRecord& peer, std::uint64_t key, std::uint64_t seq, std::int64_t now) {
  const auto& h = peer.header;
  PeerView view;
  view.world_rank = h.world_rank;
  view.pid = h.pid.load();
  std::memcpy(view.host, h.host, host_name_size);
  view.host[host_name_size - 1] = '\0';
  if (const CommProgress* progress = progress_of(peer, key)) {
    view.flags |= PeerView::has_progress;
    view.started = progress->started.load(std::memory_order_acquire);
    view.refused = progress->refused.load(std::memory_order_acquire);
    const std::string why = refusal_text(*progress, view.refused);
    std::memcpy(view.refusal, why.c_str(), std::min(why.size() + 1, refusal_text_size));
  }
  if (view.pid != 0 && !process_alive(view.pid)) view.flags |= PeerView::gone;
  if (h.finished.load()) view.flags |= PeerView::finished;
  if (!h.finished.load() && now - h.heartbeat_ns.load() > silent_after_ns) view.flags |= PeerView::silent;
  view.last_done = read_entry(peer, h.last_done.load(std::memory_order_acquire));
  view.last_done_age_ns = now - view.last_done.end_ns;
  view.current = read_entry(peer, h.current.load(std::memory_order_acquire));
  view.current_age_ns = now - view.current.start_ns;
  if (view.started >= seq) {
    // In the call (or past it): its own record of it, to compare arguments.
    view.at_seq = view.current;
    if (!view.at_seq.valid || view.at_seq.comm_key != key || view.at_seq.seq != seq) view.at_seq = find_call(peer, key, seq);
  }
  return view;
}

}  // namespace mpidist::detail
